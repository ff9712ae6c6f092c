import ArgumentParser
import Foundation
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingSim
import StarlingTerminal

struct Sim: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate broadcasts over a mesh and compare relay policies, on a virtual clock.",
        discussion: """
        Every node runs the same mesh router as a real node, over a simulated radio with \
        per-hop latency and independent loss per reception. The run is deterministic for a \
        given --seed. Pure flooding and the size of a greedy connected dominating set (a \
        near-lower bound on the transmissions a broadcast needs) are always computed too. \
        The planned policy plans each broadcast over the announced topology (every node \
        is given it, as converged announces would) and repairs what loss tears.

        Examples:
          starling sim --nodes 300 --degree 8 --loss 0.05
          starling sim --topology grid --nodes 100 --policy backbone --json
          starling sim --nodes 1000 --degree 16 --plot mesh.svg
          starling sim --scenario private --nodes 100 --loss 0.1 --churn 0.1 --messages 1000
          starling sim --scenario partition --nodes 300
          starling sim --scenario bridge --nodes 100 --messages 20 --plot bridge.svg
          starling sim --config docs/scenarios/phones-and-pis.conf --seed 7

        Scenarios: broadcast (the default) compares relay policies; private sends \
        acknowledged messages between random pairs (a source route first, retries \
        flooded; --churn is then the fraction of nodes offline at any time) and \
        measures routes against the shortest path; partition cuts the mesh in two \
        halves while public messages are sent, joins them, and measures gossip \
        sync's convergence and traffic; bridge runs two meshes of --nodes real node \
        cores each, one mesh bridge in each and a Nostr relay between them at each \
        --relay-latency, and measures delivery across, duplicates, echoes, the delay \
        and the bridges' load.

        A scenario can live in a file (--config): one option a line, `name = value`         with the option's name (`nodes = 300`, `edge-loss = 0.2`, `json = true`),         `#` for comments. Options on the command line win over the file's.
        """
    )

    enum Shape: String, ExpressibleByArgument, CaseIterable { case rgg, line, grid, clusters }
    enum Scenario: String, ExpressibleByArgument, CaseIterable { case broadcast, `private`, partition, bridge }

    @Option(help: "What to simulate: broadcast, private, partition, bridge.") var scenario: Scenario = .broadcast
    @Option(help: "Topology: rgg (random geometric), line, grid, clusters.") var topology: Shape = .rgg
    @Option(help: "Messages (private scenario), or public messages per half (partition).") var messages = 200
    @Option(help: "Number of nodes.") var nodes = 100
    @Option(help: "Mean degree (links per node) of random geometric graphs.") var degree = 8.0
    @Option(help: "At most this many links per node (phones hold 6–8).") var maxLinks: Int?
    @Option(help: "Clusters (for --topology clusters) and bridge links between neighbouring clusters.") var clusters = 3
    @Option(help: "Bridge links between neighbouring clusters.") var bridges = 2
    @Option(help: "Probability that one reception is lost.") var loss = 0.05
    @Option(help: "Loss at the edge of radio range (rgg): --loss is then the loss of the shortest links, rising with the square of a link's length to this at the radius.") var edgeLoss: Double?
    @Option(help: "Per-hop latency in virtual ms (plus up to half as much jitter).") var latency: UInt64 = 8
    @Option(help: "Largest frame a link carries (fragments above it).") var maxFrame: Int?
    @Option(help: "Probability that a node is offline during a broadcast.") var churn = 0.0
    @Option(help: "Movement (rgg only): each node's largest step between broadcasts, in side lengths of the square.") var movement = 0.0
    @Option(help: "Share of the nodes that run the deployed bitchat apps' policy (a mixed mesh: phones among Starling nodes); the policies compared run on the others.") var apps = 0.0
    @Option(help: "Share of the nodes that never relay (users who opt out, phones kept from relaying); they still receive.") var silent = 0.0
    @Option(help: "Broadcasts, from random sources.") var broadcasts = 30
    @Option(help: "TTL of each broadcast.") var ttl: UInt8 = 7
    @Option(help: "Payload bytes per broadcast.") var payload = 64
    @Option(help: "Seed of the topology and the run.") var seed: UInt64 = 1
    @Option(help: "Policy: all, or one of \(Sim.policyNames.joined(separator: ", ")).") var policy = "all"
    @Flag(help: "Print JSON.") var json = false
    @Option(help: "Write an SVG plot: delivery against transmissions, and latency distributions.") var plot: String?
    @Option(name: .customLong("relay-latency"), parsing: .upToNextOption,
            help: "The bridge scenario: the Nostr relay's latency between the two bridges, ms (several: one run each).")
    var relayLatency: [UInt64] = [100, 1_000, 5_000]
    @Option(name: .customLong("bridges-per-mesh"), help: "The bridge scenario: mesh bridges in each mesh, 1 or 2.") var bridgesPerMesh = 1
    @Flag(name: .customLong("no-gossip-sync"), help: "The bridge scenario: nodes never ask for what they missed (flooding alone), to tell the flood from the repairs.")
    var noGossipSync = false
    @Option(help: "Read options from a scenario file (`name = value` a line); the command line's win.") var config: String?

    static var policies: [any RelayPolicy] {
        [FloodingPolicy(), DegreeTablePolicy(), DeployedBitchatPolicy(), CounterPolicy(threshold: 3),
         CoveragePolicy(redundancy: 1), BackbonePolicy(), PlannedPolicy()]
    }
    static var policyNames: [String] { policies.map(\.name) }

    func validate() throws {
        guard nodes >= 2, nodes <= 20_000 else { throw ValidationError("--nodes must be 2 to 20,000") }
        guard (0...1).contains(loss), (0...1).contains(churn) else { throw ValidationError("--loss and --churn are probabilities") }
        if let edgeLoss {
            guard (0...1).contains(edgeLoss) else { throw ValidationError("--edge-loss is a probability") }
            guard topology == .rgg else { throw ValidationError("--edge-loss needs link lengths: a random geometric graph (--topology rgg)") }
        }
        guard (0...1).contains(apps) else { throw ValidationError("--apps is a share of the nodes, 0 to 1") }
        guard (0...1).contains(silent), apps + silent <= 1 else {
            throw ValidationError("--silent is a share of the nodes, 0 to 1, and with --apps at most 1")
        }
        guard broadcasts >= 1, broadcasts <= 10_000 else { throw ValidationError("--broadcasts must be 1 to 10,000") }
        guard messages >= 1, messages <= 100_000 else { throw ValidationError("--messages must be 1 to 100,000") }
        guard (1...2).contains(bridgesPerMesh) else { throw ValidationError("--bridges-per-mesh must be 1 or 2") }
        guard churn < 1 || scenario != .private else { throw ValidationError("--churn must be below 1 (the fraction offline)") }
        guard scenario != .partition || topology == .rgg else { throw ValidationError("the partition scenario cuts a random geometric graph (--topology rgg)") }
        guard policy == "all" || Self.policyNames.contains(policy) else {
            throw ValidationError("unknown policy \(policy); choose all or one of \(Self.policyNames.joined(separator: ", "))")
        }
    }

    func run() throws {
        if let config {
            // Re-read the command with the file's options first: later ones win.
            let text: String
            do { text = try String(contentsOfFile: config, encoding: .utf8) } catch {
                throw RuntimeFailure("cannot read scenario file \(config): \(error.localizedDescription)")
            }
            let fromFile = try Self.arguments(fromConfig: text, named: config)
            let merged: Sim
            do { merged = try Sim.parse(fromFile + Self.withoutConfig(Self.commandLine)) } catch {
                throw RuntimeFailure("\(config): \(Sim.message(for: error))")
            }
            return try merged.run()
        }
        var rng = SeededGenerator(seed: seed)
        var graph: Topology
        switch topology {
        case .rgg: graph = .randomGeometric(nodes: nodes, radius: Topology.radius(nodes: nodes, meanDegree: degree), rng: &rng)
        case .line: graph = .line(nodes)
        case .grid:
            let w = Int(Double(nodes).squareRoot().rounded(.up))
            graph = .grid(width: w, height: (nodes + w - 1) / w)
        case .clusters: graph = .clusters(clusters, size: max(2, nodes / clusters), meanDegree: degree, bridges: bridges, rng: &rng)
        }
        if let maxLinks { graph = graph.limitingDegree(to: maxLinks) }
        switch scenario {
        case .broadcast: try broadcast(on: graph)
        case .private: try directed(on: graph)
        case .partition: try partition(on: graph)
        case .bridge: try bridge()
        }
    }

    func bridge() throws {
        guard nodes <= 1_000 else { throw ValidationError("--nodes: the bridge scenario runs real node cores, at most 1,000 a mesh") }
        let progress = SimProgress(relayLatency.map { ("relay \($0) ms", 1) })
        var results: [BridgeSimulation.Result] = []
        for (i, latency) in relayLatency.enumerated() {
            var s = BridgeSimulation()
            s.nodesPerMesh = nodes
            s.meanDegree = degree
            s.messages = min(messages, 200)
            s.relayLatency = latency
            s.loss = loss
            s.seed = seed
            s.bridgesPerMesh = bridgesPerMesh
            s.gossipSync = !noGossipSync
            results.append(s.run(progress: progress.phase(i)))
        }
        progress.finish()
        if let plot { try BridgeSimulation.svg(results).write(toFile: plot, atomically: true, encoding: .utf8) }
        if json {
            try emit(["scenario": ["name": "bridge", "nodesPerMesh": nodes, "meanDegree": degree, "loss": loss, "seed": seed, "bridgesPerMesh": bridgesPerMesh,
                                      "gossipSync": !noGossipSync],
                      "runs": results.map { r -> [String: Any] in
                          ["relayLatencyMs": Int(r.relayLatency), "messages": r.messages, "delivery": r.delivery, "duplicates": r.duplicates,
                           "echoes": r.echoes, "depositsAtBridgeA": r.depositsAtA,
                           "carriersFromBridgeB": r.carriersFromB, "medianLatencyMs": r.medianLatency.map { Int($0) } ?? NSNull(),
                           "controlDelivery": r.controlDelivery, "carrierTransmissionsPerMessage": r.carrierTransmissionsPerMessage,
                           "carrierFramesPerMessage": r.carrierFramesPerMessage,
                           "bridgeLoad": r.bridgeLoad.map { l -> [String: Any] in
                               ["node": l.node, "eventsIn": l.eventsIn, "eventsPublished": l.eventsPublished, "framesSent": l.framesSent,
                                "framesReceived": l.framesReceived, "meshMeanFramesSent": l.meshMeanFramesSent, "meshMeanFramesReceived": l.meshMeanFramesReceived,
                                "otherBridgesKnown": l.otherBridgesKnown, "nearestOtherBridgeHops": l.nearestOtherBridgeHops ?? -1,
                                "otherBridgeDistance": l.otherBridgeDistance ?? -1, "carriersSent": l.carriersSent]
                           }]
                      }])
            return
        }
        print("two meshes of \(nodes) nodes (rgg, mean degree \(String(format: "%.1f", degree))), \(bridgesPerMesh == 1 ? "one bridge" : "two bridges") each, loss \(loss), seed \(seed)\n")
        print("relay ms  delivery  control  duplicates  echoes  deposits at A  carriers from B  carrier sends/msg  frames/msg  median delay")
        for r in results {
            print(String(format: "%8d  %7.1f%%  %6.1f%%  %10d  %6d  %13d  %15d  %17.1f  %10.1f  ", Int(r.relayLatency), r.delivery * 100, r.controlDelivery * 100,
                         r.duplicates, r.echoes, r.depositsAtA, r.carriersFromB, r.carrierTransmissionsPerMessage, r.carrierFramesPerMessage)
                  + (r.medianLatency.map { "\($0) ms" } ?? "-"))
        }
        print("\nthe bridges' load (the whole run, all packets; a mean node of its mesh in brackets)")
        print("relay ms  bridge  events in  published  frames sent        frames received  carriers sent  other bridges known (hops)  nearest in the graph")
        for r in results {
            for l in r.bridgeLoad {
                print(String(format: "%8d  ", Int(r.relayLatency)) + l.node.padding(toLength: 6, withPad: " ", startingAt: 0)
                      + String(format: "  %9d  %9d  %6d (%6.0f)  %6d (%6.0f)  %13d  %19d", l.eventsIn, l.eventsPublished,
                               l.framesSent, l.meshMeanFramesSent, l.framesReceived, l.meshMeanFramesReceived, l.carriersSent, l.otherBridgesKnown)
                      + (l.nearestOtherBridgeHops.map { " (\($0))" } ?? "")
                      + (l.otherBridgeDistance.map { "  \($0) hops" } ?? ""))
            }
        }
        if let plot { print("\nplot: \(plot)") }
    }

    var chosenPolicy: any RelayPolicy {
        Self.policies.first { $0.name == policy } ?? defaultRelayPolicy()
    }

    func emit(_ object: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    /// This command's own arguments as given (after `sim`).
    static var commandLine: [String] {
        let all = Array(CommandLine.arguments.dropFirst())
        guard let at = all.firstIndex(of: "sim") else { return all }
        return Array(all[(at + 1)...])
    }

    /// `arguments` without `--config FILE` (or `--config=FILE`).
    static func withoutConfig(_ arguments: [String]) -> [String] {
        var out: [String] = [], skip = false
        for a in arguments {
            if skip { skip = false; continue }
            if a == "--config" { skip = true; continue }
            if a.hasPrefix("--config=") { continue }
            out.append(a)
        }
        return out
    }

    /// A scenario file's options as command-line arguments: `name = value`
    /// (or `name: value`) a line, names as the options are spelt (or in
    /// camelCase), `true`/`false` for flags, `#` comments.
    static func arguments(fromConfig text: String, named file: String) throws -> [String] {
        var out: [String] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            guard let cut = line.firstIndex(where: { $0 == "=" || $0 == ":" }) else {
                throw RuntimeFailure("\(file) line \(number + 1): expected `name = value`, got `\(line)`")
            }
            var name = line[..<cut].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: cut)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let q = value.first, q == "\"" || q == "'", value.last == q { value = String(value.dropFirst().dropLast()) }
            while name.hasPrefix("-") { name.removeFirst() }
            // camelCase → kebab-case, as the options are spelt.
            name = name.reduce(into: "") { out, c in
                if c.isUppercase { out += "-" + c.lowercased() } else { out.append(c) }
            }
            guard !name.isEmpty, name != "config" else {
                throw RuntimeFailure("\(file) line \(number + 1): `\(line)` is not an option a scenario file can set")
            }
            switch value.lowercased() {
            case "true", "yes", "on": out.append("--\(name)")
            case "false", "no", "off": continue
            default: out += ["--\(name)", value]
            }
        }
        return out
    }

    /// The radio the flags describe.
    var radio: Simulator.Radio {
        var r = Simulator.Radio()
        r.loss = loss
        if let edgeLoss { r.lossAtRange = (edgeLoss, Topology.radius(nodes: nodes, meanDegree: degree)) }
        r.latency = latency
        r.latencyJitter = max(1, latency / 2)
        r.maxFrame = maxFrame
        return r
    }

    /// How the loss reads in a summary: with a loss that grows with length, its mean over the links.
    func lossDescription(_ graph: Topology) -> String {
        guard let edgeLoss else { return "loss \(loss)" }
        let links = Simulator.linkLoss(graph, radio)
        let mean = links.isEmpty ? loss : links.values.reduce(0, +) / Double(links.count)
        return "loss \(loss) rising to \(edgeLoss) at the edge of range (\(String(format: "%.3f", mean)) on average over links)"
    }

    func directed(on graph: Topology) throws {
        var e = DirectedExperiment()
        e.messages = messages
        e.ttl = ttl
        e.radio = radio
        e.churn = churn
        e.seed = seed
        let p = chosenPolicy
        var costRun = e
        costRun.radio.loss = 0
        costRun.radio.lossAtRange = nil
        costRun.churn = 0
        costRun.messages = min(messages, 200)
        let progress = SimProgress([("private: routes", 0.1), ("private: delivery", 0.9)])
        let cost = costRun.routeCost(on: graph, policy: p, progress: progress.phase(0))
        let r = e.reliability(on: graph, policy: p, progress: progress.phase(1))
        progress.finish()
        if json {
            try emit([
                "topology": ["shape": topology.rawValue, "nodes": graph.nodeCount, "meanDegree": graph.meanDegree],
                "scenario": ["name": "private", "loss": loss, "churn": churn, "messages": messages, "ttl": Int(ttl), "seed": seed,
                             "policy": p.name],
                "routes": ["messages": cost.messages, "shortestHops": cost.shortestHops, "routedTransmissions": cost.routedTransmissions,
                           "floodedTransmissions": cost.floodedTransmissions, "routedPerShortest": cost.routedRatio,
                           "delivered": cost.delivered],
                "delivery": ["sent": r.sent, "delivered": r.delivered, "failed": r.failed, "falselyDelivered": r.falselyDelivered,
                             "duplicateAcknowledgements": r.duplicateAcknowledgements, "deliveredRatio": r.deliveredRatio,
                             "attemptsPerMessage": r.attemptsPerMessage, "transmissionsPerMessage": r.transmissionsPerMessage,
                             "ackLatencyP50": r.latencyPercentile(0.5), "ackLatencyP99": r.latencyPercentile(0.99)],
            ])
        } else {
            print("\(topology.rawValue): \(graph.nodeCount) nodes, mean degree \(String(format: "%.1f", graph.meanDegree)); policy \(p.name), TTL \(ttl), seed \(seed)\n")
            print("routes (no loss, \(cost.messages) messages one at a time): shortest path \(String(format: "%.2f", cost.shortestHops)) hops; along the route \(String(format: "%.2f", cost.routedTransmissions)) transmissions (\(String(format: "%.2f", cost.routedRatio))× the shortest path); flooded \(String(format: "%.1f", cost.floodedTransmissions))")
            print("delivery (loss \(loss), \(Int(churn * 100))% offline at a time): \(r.delivered)/\(r.sent) acknowledged (\(String(format: "%.2f", r.deliveredRatio * 100))%), \(r.failed) failed, \(r.falselyDelivered) reported delivered falsely, \(r.duplicateAcknowledgements) duplicate receipts ignored")
            print("  \(String(format: "%.2f", r.attemptsPerMessage)) sends and \(String(format: "%.1f", r.transmissionsPerMessage)) transmissions per message; acknowledged after p50 \(r.latencyPercentile(0.5)) ms, p99 \(r.latencyPercentile(0.99)) ms")
        }
    }

    func partition(on graph: Topology) throws {
        var e = PartitionExperiment()
        e.messagesPerSide = messages
        e.ttl = ttl
        e.radio = radio
        e.seed = seed
        let progress = SimProgress([("partition", 1)])
        let r = e.run(on: graph, policy: chosenPolicy, progress: progress.phase(0))
        progress.finish()
        if json {
            try emit([
                "topology": ["shape": topology.rawValue, "nodes": graph.nodeCount, "meanDegree": graph.meanDegree],
                "scenario": ["name": "partition", "loss": loss, "messages": r.messages, "ttl": Int(ttl), "seed": seed],
                "completeBeforeJoin": r.completeBeforeHeal, "convergenceMs": r.convergence.map { Int($0) } ?? NSNull(),
                "syncIntervalMs": Int(r.interval), "convergenceIntervals": r.convergenceIntervals ?? NSNull(),
                "syncBytesPerNodePerIntervalApart": r.splitSyncBytesPerNodePerInterval,
                "syncBytesPerNodePerIntervalAfterJoin": r.syncBytesPerNodePerInterval,
                "allBytesPerNodePerIntervalAfterJoin": r.allBytesPerNodePerInterval, "repairsRelayed": r.repairsRelayed,
            ])
        } else {
            print("rgg: \(graph.nodeCount) nodes, mean degree \(String(format: "%.1f", graph.meanDegree)), cut in two halves; \(r.messages) public messages while apart, loss \(loss), seed \(seed)\n")
            print("nodes holding all of their half's messages before the join: \(r.completeBeforeHeal)")
            if let c = r.convergence {
                print("every node holds every message \(String(format: "%.1f", Double(c) / 1000)) s after the join (\(String(format: "%.2f", r.convergenceIntervals ?? 0)) sync intervals of \(r.interval / 1000) s)")
            } else {
                print("not converged within \(e.maxIntervals) sync intervals")
            }
            print("sync traffic: \(Int(r.splitSyncBytesPerNodePerInterval)) B/node/interval while apart, \(Int(r.syncBytesPerNodePerInterval)) after the join (all traffic \(Int(r.allBytesPerNodePerInterval))); \(r.repairsRelayed) repairs relayed")
        }
    }

    func broadcast(on graph: Topology) throws {
        var experiment = BroadcastExperiment()
        experiment.broadcasts = broadcasts
        experiment.ttl = ttl
        experiment.payloadBytes = max(8, payload)
        experiment.radio = radio
        experiment.churn = churn
        if topology == .rgg, movement > 0 {
            experiment.movement = movement
            experiment.movementRadius = Topology.radius(nodes: nodes, meanDegree: degree)
        }
        if apps > 0 { experiment.others.append((apps, DeployedBitchatPolicy())) }
        if silent > 0 { experiment.others.append((silent, NoRelayPolicy())) }
        experiment.seed = seed
        let component = graph.largestComponent
        let cds = graph.greedyConnectedDominatingSet(of: component).count
        var chosen = Self.policies.filter { policy == "all" || $0.name == policy }
        if !chosen.contains(where: { $0.name == "flooding" }) { chosen.insert(FloodingPolicy(), at: 0) }
        let progress = SimProgress(chosen.enumerated().map { i, p in ("broadcast: \(p.name) (\(i + 1) of \(chosen.count))", 1) })
        let results = chosen.enumerated().map { i, p in experiment.run(on: graph, policy: p, cdsSize: cds, progress: progress.phase(i)) }
        progress.finish()

        if json {
            var scenario: [String: Any] = ["loss": loss, "broadcasts": broadcasts, "ttl": Int(ttl), "churn": churn,
                                           "movement": movement, "apps": apps, "silent": silent, "seed": seed]
            if let edgeLoss { scenario["edgeLoss"] = edgeLoss }
            let object: [String: Any] = [
                "topology": ["shape": topology.rawValue, "nodes": graph.nodeCount, "meanDegree": graph.meanDegree,
                             "largestComponent": component.count, "greedyCDS": cds],
                "scenario": scenario,
                "policies": results.map(Self.json),
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print("\(topology.rawValue): \(graph.nodeCount) nodes, mean degree \(String(format: "%.1f", graph.meanDegree)), largest component \(component.count), greedy CDS \(cds)")
            print("\(broadcasts) broadcasts, TTL \(ttl), \(lossDescription(graph)), churn \(churn), movement \(movement)"
                  + (apps > 0 ? ", \(Int((apps * 100).rounded()))% of nodes running the deployed apps" : "")
                  + (silent > 0 ? ", \(Int((silent * 100).rounded()))% of nodes never relaying" : "") + ", seed \(seed)\n")
            print("policy          delivery  (worst)   tx/bcast  tx/CDS  dup/node  useful  latency p50/p95/p99 ms   tx/node mean/max  rx/node mean/max")
            for r in results {
                let txMean = Double(r.transmissionsPerNode.reduce(0, +)) / Double(max(1, r.nodes))
                let rxMean = Double(r.receptionsPerNode.reduce(0, +)) / Double(max(1, r.nodes))
                let label = r.policy == defaultRelayPolicy().name ? r.policy + " *" : r.policy
                let name = label + String(repeating: " ", count: max(1, 15 - label.count))
                print(name + String(format: "%8.2f%%  (%6.2f%%)  %8.1f  %6.2f  %8.2f  %5.1f%%  %6d/%6d/%6d   %8.1f/%-6d  %8.1f/%d",
                             r.meanDelivery * 100, (r.minDelivery * 10_000).rounded(.down) / 100, r.transmissionsPerBroadcast,
                             r.transmissionsPerCDS, r.duplicatesPerNodePerBroadcast, r.usefulness * 100,
                             r.latencyPercentile(0.5), r.latencyPercentile(0.95), r.latencyPercentile(0.99),
                             txMean, r.transmissionsPerNode.max() ?? 0, rxMean, r.receptionsPerNode.max() ?? 0))
            }
            if results.contains(where: { $0.policy == defaultRelayPolicy().name }) {
                print("* the default; worst = the least-delivered broadcast, rounded down")
            }
        }
        if let plot {
            let title = "\(topology.rawValue), \(graph.nodeCount) nodes, degree \(String(format: "%.1f", graph.meanDegree)), "
                + (edgeLoss.map { "loss \(loss)–\($0) by link length" } ?? "loss \(loss)") + ", TTL \(ttl)"
                + (apps > 0 ? ", \(Int((apps * 100).rounded()))% apps" : "")
                + (silent > 0 ? ", \(Int((silent * 100).rounded()))% silent" : "")
            try SVGPlot.render(results, title: title).write(toFile: plot, atomically: true, encoding: .utf8)
            // Said with the whole path (a relative name lands in the current directory); beside --json, on stderr.
            let path = URL(fileURLWithPath: plot).standardizedFileURL.path
            if json { StandardError.write(Data("starling sim: plot written to \(path)\n".utf8)) } else { print("\nplot written to \(path)") }
        }
    }

    static func json(_ r: BroadcastExperiment.Result) -> [String: Any] {
        [
            "policy": r.policy,
            "deliveryMean": r.meanDelivery, "deliveryMin": r.minDelivery, "deliveryPerBroadcast": r.deliveryRatios,
            "transmissionsPerBroadcast": r.transmissionsPerBroadcast, "transmissionsPerCDS": r.transmissionsPerCDS,
            "duplicatesPerNodePerBroadcast": r.duplicatesPerNodePerBroadcast, "usefulness": r.usefulness,
            "latencyP50": r.latencyPercentile(0.5), "latencyP95": r.latencyPercentile(0.95), "latencyP99": r.latencyPercentile(0.99),
            "transmissionsPerNode": r.transmissionsPerNode, "receptionsPerNode": r.receptionsPerNode,
            "relaysScheduled": r.relaysScheduled, "relaysCancelled": r.relaysCancelled, "linkChanges": r.linkChanges,
        ]
    }
}

/// A run's progress on standard error when that is a terminal: one line
/// redrawn in place (at most five times a second), with the time left, and
/// wiped before the results are printed. Nothing when standard error is a
/// pipe or a file.
final class SimProgress {
    private let shown: Bool
    private let start = Date()
    private var drawn: Date?
    private var drawnPhase = -1
    /// Each phase's label and share of the whole run.
    private let phases: [(label: String, share: Double)]

    init(_ phases: [(String, Double)]) {
        shown = isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
        let total = max(phases.map(\.1).reduce(0, +), .leastNonzeroMagnitude)
        self.phases = phases.map { ($0.0, $0.1 / total) }
    }

    /// What phase `index` tells of its progress (its own share done, 0…1).
    func phase(_ index: Int) -> (Double) -> Void {
        { [self] done in update(index, done) }
    }

    private func update(_ index: Int, _ done: Double) {
        guard shown, phases.indices.contains(index) else { return }
        let now = Date()
        // At most five times a second, but a new phase is always drawn (its label changed).
        if let drawn, now.timeIntervalSince(drawn) < 0.2, index == drawnPhase { return }
        drawn = now
        drawnPhase = index
        let before = phases[..<index].reduce(0) { $0 + $1.share }
        let line = ProgressLine().line("sim: " + phases[index].label, done: before + phases[index].share * done,
                                       elapsed: now.timeIntervalSince(start))
        StandardError.write(Data("\r\u{1B}[K\(line)".utf8))
    }

    func finish() {
        if shown, drawn != nil { StandardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
