import Foundation
import StarlingBlueZ
import StarlingCrypto
import StarlingDBus
import StarlingTestSupport
import StarlingWire
import Testing

/// `starling --ble` processes on virtual Bluetooth adapters (bluezoo on a
/// private D-Bus the test starts and stops).
enum BLEIDs {
    static let service = "F47B5E2D-4A9E-4C5A-9B3F-8E1D2C3A4B5C"
    static let characteristic = "A1B2C3D4-E5F6-4A5B-8C9D-0E1F2A3B4C5D"
}

@Suite(.serialized, .usesProcesses) struct BluetoothProcessTests {
    static func node(_ arguments: [String], bus: String) throws -> LiveProcess {
        let p = LiveProcess.unstarted([StarlingProcess.executable.path] + arguments)
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        p.process.environment = env
        try p.start()
        return p
    }

    @Test func twoNodesFindEachOtherOverBluetoothAndTalkPrivately() async throws {
        let zoo = try await MockBlueZ.started(adapters: 2)
        let alice = try Self.node(["listen", "--ble", "--adapter", "hci0", "--no-discovery", "--port", "0", "--json",
                                   "--name", "alice", "--duration", "40", "--announce-interval", "1",
                                   "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { alice.stop() }
        #expect(await alice.waitFor { $0["event"] as? String == "started" } != nil)
        let bob = try Self.node(["send", "--ble", "--adapter", "hci1", "--no-discovery", "--port", "0", "--json",
                                 "--name", "bob", "--data-dir", MeshProcessTests.dataDir(), "--wait", "20", "--linger", "1",
                                 "--to", "alice", "psst over bluetooth"], bus: zoo.bus.address)
        defer { bob.stop() }
        let got = await alice.waitFor(seconds: 30) { $0["event"] as? String == "privateMessage" }
        #expect(got?["text"] as? String == "psst over bluetooth", "alice:\n\(alice.text)\nbob:\n\(bob.text)\nbluezoo:\n\(zoo.logText.suffix(3000))")
        #expect(got?["hops"] as? Int == 1)
        #expect(await bob.waitFor(seconds: 30) { $0["event"] as? String == "delivered" } != nil, "bob:\n\(bob.text)")
        let link = alice.events.first { $0["event"] as? String == "linkUp" }?["address"] as? String
        #expect(link?.hasPrefix("ble ") == true)
        #expect(await bob.waitForExit(seconds: 30) == 0)
    }

    @Test func aLineOfThreeAdaptersRelaysThroughTheMiddle() async throws {
        let zoo = try await MockBlueZ.started(adapters: 3)
        func listen(_ name: String, _ adapter: String, only: String) throws -> LiveProcess {
            try Self.node(["listen", "--ble", "--adapter", adapter, "--ble-only", only, "--no-discovery", "--port", "0", "--json",
                           "--name", name, "--duration", "40", "--announce-interval", "1", "--data-dir", MeshProcessTests.dataDir()],
                          bus: zoo.bus.address)
        }
        // All three adapters hear each other; the allow-lists make a line A – B – C.
        let bob = try listen("bob", "hci1", only: "00:00:00:00:00:01,00:00:00:00:00:03")
        defer { bob.stop() }
        let carol = try listen("carol", "hci2", only: "00:00:00:00:00:02")
        defer { carol.stop() }
        #expect(await bob.waitFor(seconds: 30) { $0["event"] as? String == "peer" && $0["nickname"] as? String == "carol" } != nil,
                "bob:\n\(bob.text)\ncarol:\n\(carol.text)")
        let alice = try Self.node(["send", "--ble", "--adapter", "hci0", "--ble-only", "00:00:00:00:00:02", "--no-discovery",
                                   "--port", "0", "--json", "--name", "alice", "--data-dir", MeshProcessTests.dataDir(),
                                   "--wait", "20", "--linger", "2", "--public", "along the line"], bus: zoo.bus.address)
        defer { alice.stop() }
        let got = await carol.waitFor(seconds: 30) { $0["event"] as? String == "message" }
        #expect(got?["text"] as? String == "along the line", "carol:\n\(carol.text)\nbob:\n\(bob.text)\nalice:\n\(alice.text)")
        // Relayed by bob (2 hops), or, when carol's periodic sync request
        // reached bob before his jittered relay did, bob's sync answer: shown
        // as history from a neighbour (1 hop), and then the relay is a duplicate.
        // Alice is never taken as carol's neighbour, even when her announce came
        // in a sync answer from bob (a replayed announce binds nothing).
        #expect(got?["hops"] as? Int == 2 || (got?["history"] as? Bool == true && got?["hops"] as? Int == 1), "\(carol.text)")
        #expect(!carol.events.contains { $0["event"] as? String == "peer" && $0["nickname"] as? String == "alice" && $0["hops"] as? Int == 1 })
    }

    @Test func statesTravelOnTheirOwnCharacteristic() async throws {
        let zoo = try await MockBlueZ.started(adapters: 2)
        let watcher = try Self.node(["status", "watch", "--json", "--ble", "--adapter", "hci1", "--no-discovery", "--port", "0",
                                     "--name", "watcher", "--duration", "30", "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { watcher.stop() }
        let setter = try Self.node(["status", "set", "working", "--ble", "--adapter", "hci0", "--no-discovery", "--port", "0",
                                    "--name", "erin", "--duration", "30", "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { setter.stop() }
        let state = await watcher.waitFor(seconds: 30) { $0["event"] as? String == "state" && $0["name"] as? String == "erin" }
        #expect(state?["state"] as? String == "working", "watcher:\n\(watcher.text)\nsetter:\n\(setter.text)")
        #expect(state?["hops"] as? Int == 1)
    }

    @Test func aPeerWritingGarbageDoesNotStopTheNode() async throws {
        let zoo = try MockBlueZ(adapters: 2)
        let bus = try DBusConnection(address: zoo.bus.address)
        defer { bus.close() }
        try await zoo.ready(bus, count: 2)
        let node = try Self.node(["listen", "--ble", "--adapter", "hci1", "--no-discovery", "--port", "0", "--json",
                                  "--name", "target", "--duration", "40", "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { node.stop() }
        #expect(await node.waitFor { $0["event"] as? String == "started" } != nil)
        // The test is the attacker: a central on hci0.
        let central = BlueZCentral(bus: bus, adapter: "/org/bluez/hci0", serviceUUID: BLEIDs.service, characteristicUUID: BLEIDs.characteristic)
        try await central.startDiscovery()
        let found = try await central.discover(within: .seconds(20))
        let device = try #require(found.first, "\(zoo.logText.suffix(2000))")
        let link = try await central.connect(device.path)
        var rng = SystemRandomNumberGenerator()
        for i in 0..<200 {
            let junk = (0..<Int.random(in: 0...180, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            try await link.write(i % 3 == 0 ? [1, 1, 7] + junk : junk)
        }
        // Then something real: a newcomer's announce and its signed public message.
        let newcomer = Identity.generate()
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        try await link.write(try Announcement.make(identity: newcomer, nickname: "newcomer", timestamp: now).encoded())
        var hello = Packet(type: .message, ttl: 3, timestamp: now, senderID: newcomer.peerID, payload: Array("still listening?".utf8))
        try PacketSigning.sign(&hello, with: newcomer.signingKey)
        try await link.write(try hello.encoded())
        let got = await node.waitFor(seconds: 30) { $0["event"] as? String == "message" }
        #expect(got?["text"] as? String == "still listening?", "\(node.text)")
        #expect(node.process.isRunning)
        await link.disconnect()
    }

    @Test func wifiSetProvisioningOverGATT() async throws {
        let zoo = try await MockBlueZ.started(adapters: 2)
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("wifi-\(UUID().uuidString).json").path
        let device = try Self.node(["wifi", "device", "--ble", "--adapter", "hci0", "--networks", try WiFiCommandTests.networksFile(),
                                    "--store", store, "--secure", "--pop", "K7QF2M9X", "--duration", "40", "--json"], bus: zoo.bus.address)
        defer { device.stop() }
        #expect(await device.waitFor { $0["event"] as? String == "pop" } != nil, "\(device.text)")
        let env = ["DBUS_SYSTEM_BUS_ADDRESS": zoo.bus.address]
        // One connection per bluezoo run: it keeps a device's GATT objects after a
        // disconnection and fails the next Connect (so no scan first here).
        let ok = try await StarlingProcess.run(["wifi", "provision", "--ble", "--adapter", "hci1", "--ssid", "Home", "--password", "correct horse",
                                                "--pop", "K7QF2M9X", "--json"], environment: env)
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains(#""secured":true"#) && ok.stdout.contains(#""state":"connected""#))
        #expect(await device.waitFor { $0["event"] as? String == "status" && $0["state"] as? String == "connected" } != nil)
    }

    @Test func wifiSetScanOverGATT() async throws {
        let zoo = try await MockBlueZ.started(adapters: 2)
        let device = try Self.node(["wifi", "device", "--ble", "--adapter", "hci0", "--networks", try WiFiCommandTests.networksFile(),
                                    "--duration", "40", "--json"], bus: zoo.bus.address)
        defer { device.stop() }
        #expect(await device.waitFor { $0["event"] as? String == "started" } != nil, "\(device.text)")
        let scan = try await StarlingProcess.run(["wifi", "scan", "--ble", "--adapter", "hci1", "--json"],
                                                 environment: ["DBUS_SYSTEM_BUS_ADDRESS": zoo.bus.address])
        #expect(scan.status == 0, "\(scan.stdout)\(scan.stderr)")
        let ssids = scan.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["ssid"] as? String
        }
        #expect(ssids == ["Home", "Office", "Café"])
    }

    /// BlueZ restarts under a running node (`systemctl restart bluetooth`): the
    /// node says so once, its Bluetooth links go down, it registers again when
    /// BlueZ is back and a message over Bluetooth arrives as before. Then the
    /// bus itself goes away: said too, and SIGTERM still ends the node within
    /// 5 s (it used to hang on a D-Bus call that was never resumed).
    @Test func bluezRestartsAndTheNodeComesBackThenSIGTERMInAnOutage() async throws {
        let zoo = try await MockBlueZ.started(adapters: 2)
        let alice = try Self.node(["listen", "--ble", "--adapter", "hci0", "--no-discovery", "--port", "0", "--json",
                                   "--name", "alice", "--duration", "150", "--announce-interval", "1",
                                   "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { alice.stop() }
        #expect(await alice.waitFor { $0["event"] as? String == "started" } != nil)
        func send(_ text: String) async throws -> LiveProcess {
            try Self.node(["send", "--ble", "--adapter", "hci1", "--no-discovery", "--port", "0", "--json", "--name", "bob",
                           "--data-dir", MeshProcessTests.dataDir(), "--wait", "30", "--linger", "1", "--to", "alice", text], bus: zoo.bus.address)
        }
        func arrived(_ text: String) async -> Bool {
            await alice.waitFor(seconds: 45) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == text } != nil
        }
        // Before: the positive control.
        let before = try await send("before the restart")
        defer { before.stop() }
        #expect(await arrived("before the restart"), "alice:\n\(alice.text)\nbluezoo:\n\(zoo.logText.suffix(2000))")
        #expect(await before.waitForExit(seconds: 40) == 0, "\(before.text)")

        zoo.stopBlueZ()
        // (bluezoo may say its adapters are gone before its name is: either is said.)
        let gone = await alice.waitFor(seconds: 30) { ($0["text"] as? String)?.hasPrefix("Bluetooth (hci0): ") == true }
        #expect(gone != nil, "\(alice.text)")
        try await zoo.startBlueZ(adapters: 2)
        let returned = ContinuousClock.now
        let back = await alice.waitFor(seconds: 60) { ($0["text"] as? String)?.contains("Bluetooth (hci0) is back") == true }
        #expect(back != nil, "\(alice.text)")
        print("BlueZ answering again → the node registered again: \(ContinuousClock.now - returned)") // docs/NODE.md's figure
        let after = try await send("after the restart")
        defer { after.stop() }
        #expect(await arrived("after the restart"), "alice:\n\(alice.text)\nbluezoo:\n\(zoo.logText.suffix(2000))")
        #expect(await after.waitForExit(seconds: 40) == 0, "\(after.text)")
        // Said once each time.
        #expect(alice.events.filter { ($0["text"] as? String)?.contains("its links are down") == true }.count == 1, "\(alice.text)")

        // The bus goes away too: said, and SIGTERM ends the node on time.
        zoo.stop()
        #expect(await alice.waitFor(seconds: 30) { _ in
            alice.events.filter { ($0["text"] as? String)?.contains("its links are down") == true }.count == 2
        } != nil, "\(alice.text)")
        let signalled = ContinuousClock.now
        kill(alice.process.processIdentifier, SIGTERM)
        let status = await alice.waitForExit(seconds: 20)
        #expect(status != nil, "SIGTERM did not end the node: \(alice.text)")
        #expect(ContinuousClock.now - signalled < .seconds(5), "\(ContinuousClock.now - signalled)")
        print("SIGTERM with BlueZ and the bus gone → exited: \(ContinuousClock.now - signalled)")
    }

    @Test func noAdapterIsSaidPlainly() async throws {
        let zoo = try await MockBlueZ.started(adapters: 1)
        let p = try Self.node(["listen", "--ble", "--adapter", "hci7", "--no-discovery", "--port", "0", "--json",
                               "--name", "x", "--duration", "3", "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { p.stop() }
        let rejected = await p.waitFor(seconds: 30) { $0["event"] as? String == "rejected" }
        #expect((rejected?["reason"] as? String)?.contains("no Bluetooth adapter hci7; there is hci0") == true, "\(p.text)")
    }

    @Test func anAdapterThatIsOffIsSaidPlainly() async throws {
        let zoo = try await MockBlueZ.started(adapters: 1, poweredOn: false)
        let p = try Self.node(["listen", "--ble", "--no-discovery", "--port", "0", "--json",
                               "--name", "x", "--duration", "3", "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { p.stop() }
        let rejected = await p.waitFor(seconds: 30) { $0["event"] as? String == "rejected" }
        #expect((rejected?["reason"] as? String)?.contains("hci0 is off") == true, "\(p.text)")
        #expect(await p.waitForExit(seconds: 30) == 0)            // it still runs its other links, then stops on time
    }
}
