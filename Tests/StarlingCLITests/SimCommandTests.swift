import Foundation
import StarlingTestSupport
import Testing

@Suite(.usesProcesses) struct SimCommandTests {
    @Test func jsonHasEveryPolicyFloodingAndTheCDS() async throws {
        let r = try await StarlingProcess.run(["sim", "--nodes", "60", "--degree", "8", "--broadcasts", "5", "--ttl", "32", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let topology = try #require(object["topology"] as? [String: Any])
        #expect((topology["greedyCDS"] as? Int ?? 0) > 0)
        let policies = try #require(object["policies"] as? [[String: Any]])
        let names = policies.compactMap { $0["policy"] as? String }
        #expect(names == ["flooding", "degree-table", "bitchat", "counter-3", "coverage", "backbone", "planned"])
        for p in policies {
            let delivery = try #require(p["deliveryMean"] as? Double)
            #expect(delivery >= 0 && delivery <= 1)
            #expect((p["transmissionsPerNode"] as? [Int])?.count == 60)
        }
        let flooding = policies[0]
        #expect((flooding["deliveryMean"] as? Double ?? 0) > 0.9)
    }

    /// A mixed mesh: with every node running the deployed apps, the policy
    /// asked for runs nowhere, so every policy gives the same run; with a
    /// share, the apps' relays show up in the planned policy's figures.
    @Test func mixedMeshWithTheDeployedApps() async throws {
        func run(_ apps: String) async throws -> [[String: Any]] {
            let r = try await StarlingProcess.run(["sim", "--nodes", "80", "--degree", "8", "--broadcasts", "6", "--apps", apps,
                                                   "--policy", "planned", "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            #expect((object["scenario"] as? [String: Any])?["apps"] as? Double == Double(apps))
            return try #require(object["policies"] as? [[String: Any]])
        }
        let all = try await run("1")
        #expect(all.count == 2)
        #expect(all[0]["deliveryPerBroadcast"] as? [Double] == all[1]["deliveryPerBroadcast"] as? [Double])
        #expect(all[0]["transmissionsPerNode"] as? [Int] == all[1]["transmissionsPerNode"] as? [Int])
        let none = try await run("0"), some = try await run("0.3")
        #expect(none[1]["transmissionsPerNode"] as? [Int] != some[1]["transmissionsPerNode"] as? [Int])
        let bad = try await StarlingProcess.run(["sim", "--apps", "1.5"])
        #expect(bad.status != 0 && bad.stderr.contains("--apps"))
    }

    /// Nodes that never relay: they transmit nothing but their own broadcasts,
    /// and a share that does not fit beside the apps' is refused.
    @Test func silentNodes() async throws {
        func idle(_ silent: String) async throws -> (Int, Double) {
            let r = try await StarlingProcess.run(["sim", "--nodes", "80", "--degree", "8", "--broadcasts", "6",
                                                   "--silent", silent, "--policy", "flooding", "--json", "--ttl", "16"])
            #expect(r.status == 0, "\(r.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            #expect((object["scenario"] as? [String: Any])?["silent"] as? Double == Double(silent))
            let flooding = try #require((object["policies"] as? [[String: Any]])?.first)
            let perNode = try #require(flooding["transmissionsPerNode"] as? [Int])
            return (perNode.filter { $0 == 0 }.count, flooding["deliveryMean"] as? Double ?? 0)
        }
        // Flooding: every relaying node sends each broadcast once; silent ones only their own.
        let (before, _) = try await idle("0"), (after, delivery) = try await idle("0.3")
        #expect(after >= before + 10)
        #expect(delivery > 0.9)
        let bad = try await StarlingProcess.run(["sim", "--silent", "0.6", "--apps", "0.5"])
        #expect(bad.status != 0 && bad.stderr.contains("--silent"))
    }

    /// Loss that grows with link length: flooding loses more than with the
    /// near loss alone, the summary gives the mean over links, and shapes
    /// without lengths are refused.
    @Test func edgeLossGrowsWithLength() async throws {
        func flooding(_ extra: [String]) async throws -> (Double, [String: Any]) {
            let r = try await StarlingProcess.run(["sim", "--nodes", "120", "--degree", "6", "--broadcasts", "8", "--ttl", "32",
                                                   "--loss", "0", "--policy", "flooding", "--json"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let policies = try #require(object["policies"] as? [[String: Any]])
            return (try #require(policies[0]["deliveryMean"] as? Double), try #require(object["scenario"] as? [String: Any]))
        }
        let (clean, plain) = try await flooding([])
        let (lossy, scenario) = try await flooding(["--edge-loss", "0.9"])
        #expect(clean == 1 && lossy < 1)
        #expect(plain["edgeLoss"] == nil && scenario["edgeLoss"] as? Double == 0.9)
        let text = try await StarlingProcess.run(["sim", "--nodes", "60", "--broadcasts", "2", "--policy", "flooding", "--loss", "0.01", "--edge-loss", "0.2"])
        #expect(text.status == 0 && text.stdout.contains("loss 0.01 rising to 0.2 at the edge of range ("))
        let grid = try await StarlingProcess.run(["sim", "--topology", "grid", "--edge-loss", "0.2"])
        #expect(grid.status != 0 && grid.stderr.contains("--edge-loss"))
    }

    /// A scenario file sets options as the flags would; the command line wins;
    /// a line that is not an option is refused with its file and line.
    @Test func scenarioFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-scenario-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("mesh.conf")
        try """
        # a small sparse mesh
        nodes = 70
        degree: 7        # either separator
        broadcasts = 4
        policy = "backbone"
        edgeLoss = 0.1   # camelCase too
        json = true
        """.write(to: file, atomically: true, encoding: .utf8)
        func scenario(_ extra: [String]) async throws -> ([String: Any], [String: Any], [[String: Any]]) {
            let r = try await StarlingProcess.run(["sim", "--config", file.path] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            return (try #require(object["topology"] as? [String: Any]), try #require(object["scenario"] as? [String: Any]),
                    try #require(object["policies"] as? [[String: Any]]))
        }
        let (topology, settings, policies) = try await scenario([])
        #expect(topology["nodes"] as? Int == 70 && settings["broadcasts"] as? Int == 4 && settings["edgeLoss"] as? Double == 0.1)
        #expect(policies.compactMap { $0["policy"] as? String } == ["flooding", "backbone"])
        let (_, overridden, _) = try await scenario(["--broadcasts", "2", "--seed", "9"])
        #expect(overridden["broadcasts"] as? Int == 2 && overridden["seed"] as? Int == 9)

        try "nodes = 50\nthis is not an option\n".write(to: file, atomically: true, encoding: .utf8)
        let bad = try await StarlingProcess.run(["sim", "--config", file.path])
        #expect(bad.status != 0 && bad.stderr.contains("line 2"))
        try "nodes = 50\nwarp = 9\n".write(to: file, atomically: true, encoding: .utf8)
        let unknown = try await StarlingProcess.run(["sim", "--config", file.path])
        #expect(unknown.status != 0 && unknown.stderr.contains(file.path) && unknown.stderr.contains("warp"))
        let missing = try await StarlingProcess.run(["sim", "--config", dir.appendingPathComponent("none.conf").path])
        #expect(missing.status != 0 && missing.stderr.contains("cannot read scenario file"))
    }

    /// The scenario shipped in docs/ runs as its comment says.
    @Test func shippedScenarioRuns() async throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = repo.appendingPathComponent("docs/scenarios/phones-and-pis.conf").path
        let plot = FileManager.default.temporaryDirectory.appendingPathComponent("starling-scenario-\(getpid()).svg")
        defer { try? FileManager.default.removeItem(at: plot) }
        let r = try await StarlingProcess.run(["sim", "--config", file, "--broadcasts", "3", "--plot", plot.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try String(contentsOf: plot, encoding: .utf8).contains("loss 0.02–0.15 by link length, TTL 7, 30% apps"))
        #expect(r.stderr.contains("plot written to \(plot.standardizedFileURL.path)"), "\(r.stderr)") // beside --json: where it went, on stderr
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let settings = try #require(object["scenario"] as? [String: Any])
        #expect(settings["apps"] as? Double == 0.3 && settings["ttl"] as? Int == 7 && settings["edgeLoss"] as? Double == 0.15)
    }

    @Test func textTableAndPlot() async throws {
        let plot = FileManager.default.temporaryDirectory.appendingPathComponent("starling-sim-\(getpid()).svg")
        defer { try? FileManager.default.removeItem(at: plot) }
        let r = try await StarlingProcess.run(["sim", "--topology", "grid", "--nodes", "36", "--broadcasts", "3",
                                         "--policy", "backbone", "--plot", plot.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("grid: 36 nodes"))
        #expect(r.stdout.contains("backbone"))
        #expect(r.stdout.contains("flooding")) // always there for comparison
        #expect(!r.stdout.contains("* the default")) // the default (planned) was not asked for
        let svg = try String(contentsOf: plot, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("polyline") && svg.contains("backbone"))
        let planned = try await StarlingProcess.run(["sim", "--topology", "grid", "--nodes", "36", "--broadcasts", "3", "--policy", "planned"])
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(planned.stdout.contains("planned *") && planned.stdout.contains("* the default"))
    }

    @Test func privateScenarioReportsRoutesAndDelivery() async throws {
        let r = try await StarlingProcess.run(["sim", "--scenario", "private", "--nodes", "40", "--messages", "40",
                                         "--loss", "0.1", "--churn", "0.05", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let routes = try #require(object["routes"] as? [String: Any])
        let ratio = try #require(routes["routedPerShortest"] as? Double)
        #expect(ratio >= 1 && ratio <= 1.2)
        #expect((routes["floodedTransmissions"] as? Double ?? 0) > (routes["routedTransmissions"] as? Double ?? 0))
        let delivery = try #require(object["delivery"] as? [String: Any])
        #expect(delivery["sent"] as? Int == 40)
        #expect(delivery["falselyDelivered"] as? Int == 0)
        #expect((delivery["delivered"] as? Int ?? 0) + (delivery["failed"] as? Int ?? 0) == 40)
        // Deterministic for a seed, from one process to the next (each hashes sets in its own
        // order), also where announces cannot name every neighbour (more than ten).
        // (Before a fix, three runs of this differed most of the time.)
        let dense = ["sim", "--scenario", "private", "--nodes", "80", "--degree", "14", "--messages", "30", "--loss", "0.05", "--json"]
        var outputs: [String] = []
        for _ in 0..<3 { outputs.append(try await StarlingProcess.run(dense).stdout) }
        #expect(!outputs[0].isEmpty)
        #expect(Set(outputs).count == 1)
    }

    @Test func partitionScenarioConverges() async throws {
        let r = try await StarlingProcess.run(["sim", "--scenario", "partition", "--nodes", "80", "--messages", "4"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("every node holds every message"))
        #expect(r.stdout.contains("B/node/interval"))
    }

    @Test func badArgumentsAreRefused() async throws {
        let r = try await StarlingProcess.run(["sim", "--policy", "nonsense"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("unknown policy"))
        // A negative count is its value, out of range: said so, not "Missing value".
        let negative = try await StarlingProcess.run(["sim", "--nodes", "-5"])
        #expect(negative.status == 64 && negative.stderr.contains("--nodes must be 2 to 20,000"), "\(negative.stderr)")
        #expect(!negative.stderr.contains("Missing value"))
    }
}

/// A long run shows its progress on a terminal (a bar, redrawn in place,
/// wiped before the results) and nothing of it in a pipe.
@Suite(.usesProcesses) struct SimProgressTests {
    @Test func aBarOnATerminalAndNothingInAPipe() async throws {
        let arguments = ["sim", "--scenario", "private", "--nodes", "40", "--messages", "60"]
        // `script` gives the command a real terminal and writes what it drew.
        let command = ([StarlingProcess.executable.path] + arguments).joined(separator: " ")
        let terminal = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/usr/bin/script"),
                                                     ["-q", "-e", "-c", command, "/dev/null"], environment: ["TERM": "xterm"])
        #expect(terminal.status == 0, "\(terminal.stdout)")
        let drawn = terminal.stdout
        #expect(drawn.contains("\r\u{1B}[Ksim: private: routes ["), "\(drawn.debugDescription)")
        #expect(drawn.contains("\r\u{1B}[Ksim: private: delivery ["), "\(drawn.debugDescription)")
        // Wiped, then the results.
        if let lastBar = drawn.range(of: "sim: private:", options: .backwards), let results = drawn.range(of: "acknowledged (") {
            #expect(lastBar.lowerBound < results.lowerBound)
            #expect(drawn[lastBar.lowerBound..<results.lowerBound].contains("\r\u{1B}[K"), "\(drawn.debugDescription)")
        } else {
            Issue.record("no bar or no results: \(drawn.debugDescription)")
        }
        let piped = try await StarlingProcess.run(arguments)
        #expect(piped.status == 0 && piped.stdout.contains("acknowledged ("), "\(piped.stdout)")
        #expect(!piped.stderr.contains("sim:") && !piped.stdout.contains("sim:"), "\(piped.stderr)")
    }
}
