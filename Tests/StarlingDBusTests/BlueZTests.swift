import Foundation
import Testing
@testable import StarlingBlueZ
@testable import StarlingDBus
import StarlingTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized, .usesProcesses) struct BlueZTests {
    static let service = "F47B5E2D-4A9E-4C5A-9B3F-8E1D2C3A4B5C"
    static let characteristic = "A1B2C3D4-E5F6-4A5B-8C9D-0E1F2A3B4C5D"

    @Test func aPeripheralAndACentralOnTwoAdaptersExchangeBytes() async throws {
        let zoo = try MockBlueZ(adapters: 2)
        let a = try DBusConnection(address: zoo.bus.address)
        defer { a.close() }
        let b = try DBusConnection(address: zoo.bus.address)
        defer { b.close() }
        try await zoo.ready(a, count: 2)
        let adapters = try await BlueZ.adapters(a)
        #expect(adapters.keys.sorted() == ["/org/bluez/hci0", "/org/bluez/hci1"])

        let peripheral = BlueZPeripheral(bus: a, adapter: "/org/bluez/hci0", serviceUUID: Self.service, characteristicUUID: Self.characteristic)
        try await peripheral.start()
        let central = BlueZCentral(bus: b, adapter: "/org/bluez/hci1", serviceUUID: Self.service, characteristicUUID: Self.characteristic)
        try await central.startDiscovery()
        let found = try await central.discover(within: .seconds(15))
        let device = try #require(found.first, "no device found:\n\(zoo.logText)")
        #expect(device.address == "00:00:00:00:00:01")
        await central.stopDiscovery()

        let link: BlueZLink
        do { link = try await central.connect(device.path) } catch {
            Issue.record("\(error)\n\(zoo.logText)")
            throw error
        }
        #expect(link.mtu >= 23)
        try await link.write(Array("hello".utf8))
        let written = await first(peripheral.writes, seconds: 30)
        #expect(written?.bytes == Array("hello".utf8), "\(zoo.logText)")
        #expect(written?.device.hasPrefix("/org/bluez/hci0/dev_") == true)

        // Notifications reach the subscribed central.
        let deadline2 = ContinuousClock.now + .seconds(30)
        while !peripheral.isNotifying, ContinuousClock.now < deadline2 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(peripheral.isNotifying)
        try peripheral.notify(Array("world".utf8))
        let notified = await first(link.notifications, seconds: 30)
        #expect(notified == Array("world".utf8), "\(zoo.logText)")
        await link.disconnect()
        await peripheral.stop()

        // Devices left behind (address rotation) are pruned; kept ones stay.
        let kept = try await central.pruneStale(keeping: [device.path])
        #expect(kept.isEmpty)
        let pruned = try await central.pruneStale(keeping: [])
        #expect(pruned == [device.path])
        #expect(try await central.candidates().isEmpty)
    }

    func first<S: AsyncSequence & Sendable>(_ s: S, seconds: Double) async -> S.Element? where S.Element: Sendable {
        await withTaskGroup(of: S.Element?.self) { group in
            group.addTask { var it = s.makeAsyncIterator(); return try? await it.next() }
            group.addTask { try? await Task.sleep(for: .seconds(seconds)); return nil }
            let r = await group.next() ?? nil
            group.cancelAll()
            return r
        }
    }
}
