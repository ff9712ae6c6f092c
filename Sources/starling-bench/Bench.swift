#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// starling-bench: speed of Starling's codecs and engines, with baselines
/// measured in the same run. Build and run in release mode:
///
///     swift run -c release starling-bench wire
///
/// Each line gives ns/op and ops/s (median of 5 rounds); a ratio line compares
/// a result with its baseline from the same process.
@main
struct StarlingBench {
    static func main() async {
        #if canImport(Glibc)
        // Keep freed memory in the heap instead of returning it to the kernel
        // after every large buffer: otherwise 64 KiB frames measure page faults.
        _ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, 64 << 20)
        _ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 16 << 20)
        // A line at a time, also into a pipe or a file: long areas (soak)
        // report as they go, and a run cut short keeps what it printed.
        setvbuf(stdout, nil, _IOLBF, 0)
        #endif
        var args = Array(CommandLine.arguments.dropFirst())
        // A child of `node`: the previous runtime's wake pattern, for the idle baseline.
        // Children of `bulk`, one in each network namespace.
        switch args.first {
        case "link-plain-receive": BulkLinkBench.plainReceive(Array(args.dropFirst())); return
        case "link-plain-send": BulkLinkBench.plainSend(Array(args.dropFirst())); return
        case "link-bulk-serve": await BulkLinkBench.bulkServe(Array(args.dropFirst())); return
        case "link-bulk-fetch": await BulkLinkBench.bulkFetch(Array(args.dropFirst())); return
        default: break
        }
        if args.first == "poll-loop" {
            await NodeBench.pollLoop(seconds: Double(args.dropFirst().first ?? "60") ?? 60)
            return
        }
        let areas: [String: () async -> Void] = ["wire": WireBench.run, "noise": NoiseBench.run, "groups": GroupBench.run, "bridge": BridgeBench.run, "mesh": MeshBench.run,
                                                  "mesh-sweep": MeshBench.sweep, "mesh-seeds": MeshBench.seeds, "mesh-tails": MeshBench.tails, "mesh-graphs": MeshBench.graphs, "node": NodeBench.run, "hostile": HostileBench.run, "services": ServicesBench.run, "stately": StatelyBench.run, "store": StoreBench.run, "yaok-server": ServerBench.run, "yaok-server-store": ServerBench.storeAlone, "yaok-server-fleet": FleetBench.run, "yaok-server-population": PopulationBench.run, "api": APIBench.run, "web": WebBench.run, "soak": SoakBench.run, "bulk": BulkBench.run]
        // Old names (docs/GLOSSARY.md: "relay" is mesh forwarding), still taken.
        let retired = ["relay": "yaok-server", "relay-store": "yaok-server-store"]
        args = args.map { retired[$0] ?? $0 }
        // `yaok-server --servers 1,2,4`: the fleet on one PostgreSQL instead of one server.
        if let i = args.firstIndex(of: "--servers") {
            let counts = i + 1 < args.count ? args[i + 1].split(separator: ",").compactMap { Int($0) }.filter { (1...16).contains($0) } : []
            guard !counts.isEmpty else {
                print("starling-bench: --servers takes counts from 1 to 16 separated by commas (e.g. 1,2,4)")
                exit(64)
            }
            FleetBench.counts = counts
            args.removeSubrange(i..<min(args.count, i + 2))
            args = args.map { $0 == "yaok-server" ? "yaok-server-fleet" : $0 }
        }
        if args.isEmpty || args.contains("-h") || args.contains("--help") {
            print("usage: starling-bench AREA...   (areas: \(areas.keys.sorted().joined(separator: ", ")))")
            return
        }
        for a in args {
            guard let run = areas[a] else {
                print("starling-bench: unknown area \(a)")
                continue
            }
            await run()
        }
    }
}

#if canImport(Glibc)
@_silgen_name("mallopt")
func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif

/// Keeps the optimiser from removing work whose result is unused.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

struct Measurement {
    var name: String
    var nanosPerOp: Double
    var opsPerSecond: Double { 1e9 / nanosPerOp }
}

enum Timer {
    /// Runs `body` in rounds of enough iterations to take about 100 ms, and
    /// returns the median time per operation over 5 rounds.
    static func measure(_ name: String, opsPerCall: Int = 1, _ body: () -> Void) -> Measurement {
        let clock = ContinuousClock()
        var iterations = 1
        while true { // calibrate
            let t = clock.measure { for _ in 0..<iterations { body() } }
            if t >= .milliseconds(20) || iterations >= 1 << 26 { break }
            iterations *= 4
        }
        let perRound = max(1, iterations * 5)
        var samples: [Double] = []
        for _ in 0..<5 {
            let t = clock.measure { for _ in 0..<perRound { body() } }
            let ns = Double(t.components.seconds) * 1e9 + Double(t.components.attoseconds) / 1e9
            samples.append(ns / Double(perRound * opsPerCall))
        }
        samples.sort()
        return Measurement(name: name, nanosPerOp: samples[2])
    }

    static func report(_ m: Measurement) {
        let ns = m.nanosPerOp
        let nsText = ns < 10_000 ? String(format1(ns)) + " ns" : String(format1(ns / 1000)) + " µs"
        print("  \(m.name.padding(48))\(nsText.leftPadding(12))/op  \(format1(m.opsPerSecond / 1e6).leftPadding(9)) M ops/s")
    }

    static func ratio(_ label: String, baseline: Measurement, ours: Measurement) {
        print("  ratio \(label.padding(42))\(format2(baseline.nanosPerOp / ours.nanosPerOp).leftPadding(9))× (\(baseline.name) / \(ours.name))")
    }
}

func format2(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    let s = String(r)
    return s.contains(".") && s.split(separator: ".")[1].count == 1 ? s + "0" : s
}

func format1(_ v: Double) -> String {
    let r = (v * 10).rounded() / 10
    return r >= 100 ? String(Int(r.rounded())) : String(r)
}

extension String {
    func padding(_ n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
    func leftPadding(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

func format3(_ v: Double) -> String { String(format: "%.3f", v) }
