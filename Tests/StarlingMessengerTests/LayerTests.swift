import Foundation
import Testing

/// Layers point one way (wire ← crypto ← mesh ← node core ← messenger core ←
/// messenger ← faces), and the cores have no I/O: read from the package as
/// SwiftPM itself describes it (`swift package dump-package`), so a dependency
/// added in Package.swift that breaks either fails here, not in review.
@Suite struct LayerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each target's direct dependencies: other targets by name, products as `product:NAME`.
    static func targets() throws -> [String: Set<String>] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("starling-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A scratch path of its own: the suite's build directory stays locked by `swift test`.
        process.arguments = ["swift", "package", "--scratch-path", scratch.path, "dump-package"]
        process.currentDirectoryURL = root
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "swift package dump-package failed")
        let package = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var result: [String: Set<String>] = [:]
        for target in package["targets"] as? [[String: Any]] ?? [] {
            guard let name = target["name"] as? String else { continue }
            var deps: Set<String> = []
            for dep in target["dependencies"] as? [[String: Any]] ?? [] {
                if let byName = dep["byName"] as? [Any], let n = byName.first as? String { deps.insert(n) }
                if let target = dep["target"] as? [Any], let n = target.first as? String { deps.insert(n) }
                if let product = dep["product"] as? [Any], let n = product.first as? String { deps.insert("product:\(n)") }
            }
            result[name] = deps
        }
        return result
    }

    static func closure(_ name: String, in targets: [String: Set<String>]) -> Set<String> {
        var seen: Set<String> = [], stack = [name]
        while let next = stack.popLast() {
            for dep in targets[next] ?? [] where seen.insert(dep).inserted { stack.append(dep) }
        }
        return seen
    }

    /// What does I/O: sockets, files through a database, processes' event loops, the runtimes.
    static let io: Set<String> = [
        "product:NIOCore", "product:NIOPosix", "product:NIOExtras", "product:GRDB", "product:Hummingbird", "product:WSClient",
        "product:AsyncHTTPClient", "product:PostgresNIO", "StarlingNode", "StarlingTransport", "StarlingStore",
        "StarlingNostrTransport", "StarlingMessenger", "StarlingMessengerAPI", "StarlingBluetooth", "StarlingDBus",
    ]

    @Test func theCoresHaveNoIOAndTheLayersPointOneWay() throws {
        let targets = try Self.targets()
        #expect(targets.count > 30, "the package's targets: \(targets.keys.sorted())")
        // The positive control: the walk finds what the runtime reaches through others (GRDB through the store).
        let messenger = Self.closure("StarlingMessenger", in: targets)
        #expect(messenger.contains("product:GRDB") && messenger.contains("product:NIOCore") && messenger.contains("StarlingMessengerCore"),
                "\(messenger.sorted())")

        let cores = ["StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingStately", "StarlingNodeCore", "StarlingYaOK",
                     "StarlingNostr", "StarlingMessengerCore", "StarlingAPIContract"]
        for core in cores {
            try #require(targets[core] != nil, "no target \(core)")
            let reached = Self.closure(core, in: targets).intersection(Self.io)
            #expect(reached.isEmpty, "\(core) is a core without I/O, but reaches \(reached.sorted())")
        }
        // The contract is Foundation's alone: any face, in any language's client, reads the same types.
        #expect(Self.closure("StarlingAPIContract", in: targets).isEmpty)

        let layers = ["StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingNodeCore", "StarlingMessengerCore", "StarlingMessenger",
                      "StarlingMessengerAPI", "starling"]
        for (i, layer) in layers.enumerated() {
            let reached = Self.closure(layer, in: targets)
            let above = layers[(i + 1)...].filter(reached.contains)
            #expect(above.isEmpty, "\(layer) depends on \(above), a layer above it")
        }
        // The control: the command line stands on every layer below it.
        #expect(Self.closure("starling", in: targets).isSuperset(of: layers.dropLast()))
    }
}
