import Foundation
import StarlingDBus
import StarlingTestSupport
import Testing

/// `starling --ble` processes on virtual Bluetooth adapters (bluezoo on a
/// private D-Bus the test starts and stops).
@Suite(.serialized) struct BluetoothProcessTests {
    static func node(_ arguments: [String], bus: String) throws -> LiveProcess {
        let p = LiveProcess.unstarted([StarlingProcess.executable.path] + arguments)
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        p.process.environment = env
        try p.start()
        return p
    }

    @Test func twoNodesFindEachOtherOverBluetoothAndTalkPrivately() async throws {
        let zoo = try MockBlueZ(adapters: 2)
        let probe = try DBusConnection(address: zoo.bus.address)
        try await zoo.ready(probe, count: 2)
        probe.close()
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
        #expect(await bob.waitFor(seconds: 10) { $0["event"] as? String == "delivered" } != nil, "bob:\n\(bob.text)")
        let link = alice.events.first { $0["event"] as? String == "linkUp" }?["address"] as? String
        #expect(link?.hasPrefix("ble ") == true)
        #expect(await bob.waitForExit(seconds: 15) == 0)
    }

    @Test func noAdapterIsSaidPlainly() async throws {
        let zoo = try MockBlueZ(adapters: 1)
        let probe = try DBusConnection(address: zoo.bus.address)
        try await zoo.ready(probe, count: 1)
        probe.close()
        let p = try Self.node(["listen", "--ble", "--adapter", "hci7", "--no-discovery", "--port", "0", "--json",
                               "--name", "x", "--duration", "3", "--data-dir", MeshProcessTests.dataDir()], bus: zoo.bus.address)
        defer { p.stop() }
        let rejected = await p.waitFor(seconds: 10) { $0["event"] as? String == "rejected" }
        #expect((rejected?["reason"] as? String)?.contains("no Bluetooth adapter hci7; there is hci0") == true, "\(p.text)")
    }
}
