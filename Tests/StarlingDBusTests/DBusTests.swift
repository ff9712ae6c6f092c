import Foundation
import Testing
@testable import StarlingDBus
import StarlingTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized, .usesProcesses) struct DBusTests {
    static let everyType: [DBusValue] = [
        .byte(0xFE), .bool(true), .bool(false), .int16(-2), .uint16(65_000), .int32(-70_000), .uint32(4_000_000_000),
        .int64(-5_000_000_000), .uint64(18_000_000_000_000_000_000), .double(-1.5), .string("héllo ☕"), .objectPath("/org/bluez/hci0"),
        .signature("a{sv}"), .variant(.uint16(517)), .bytes([0, 1, 2, 255]), .bytes([]), .strings(["a", "b"]),
        .array(element: "(is)", [.structure([.int32(1), .string("x")])]),
        .properties(["UUID": .string("f47b5e2d-4a9e-4c5a-9b3f-8e1d2c3a4b5c"), "Flags": .strings(["notify", "write"]),
                     "Value": .bytes([9, 9])]),
        .dictionary(key: "o", value: "a{sa{sv}}", [.init(.objectPath("/a"), .dictionary(key: "s", value: "a{sv}", [
            .init(.string("org.bluez.GattService1"), .properties(["Primary": .bool(true)])),
        ]))]),
    ]

    @Test func callsCarryEveryTypeAndErrorsComeBackNamed() async throws {
        let bus = try PrivateBus()
        let server = try DBusConnection(address: bus.address)
        defer { server.close() }
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        #expect(server.uniqueName.hasPrefix(":") && server.uniqueName != client.uniqueName)
        try await server.requestName("org.starling.Test")
        try server.export("/org/starling/Echo") { call in
            switch call.member {
            case "Echo": .values(call.args)
            case "Fail": .error(name: "org.starling.Error.Nope", message: "as asked")
            default: .notHandled
            }
        }
        let back = try await client.call("org.starling.Test", "/org/starling/Echo", "org.starling.Echo", "Echo", Self.everyType)
        #expect(back == Self.everyType)
        do {
            _ = try await client.call("org.starling.Test", "/org/starling/Echo", "org.starling.Echo", "Fail")
            Issue.record("no error")
        } catch let e as DBusError {
            #expect(e.name == "org.starling.Error.Nope" && e.message == "as asked")
        }
        do {
            _ = try await client.call("org.starling.Test", "/org/starling/Echo", "org.starling.Echo", "Missing")
            Issue.record("no error")
        } catch let e as DBusError {
            #expect(e.name == "org.freedesktop.DBus.Error.UnknownMethod")
        }
        do {
            _ = try await client.call("org.starling.Nobody", "/", "org.starling.Echo", "Echo")
            Issue.record("no error")
        } catch let e as DBusError {
            #expect(e.name == "org.freedesktop.DBus.Error.ServiceUnknown")
        }
    }

    @Test func signalsArriveWhereAMatchAsksForThem() async throws {
        let bus = try PrivateBus()
        let server = try DBusConnection(address: bus.address)
        defer { server.close() }
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        try await client.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        let stream = client.signals                       // a reader from here on
        let other = client.signals                        // and another: each sees every signal
        try server.emit("/org/bluez/hci0/dev_00/char0", "org.freedesktop.DBus.Properties", "PropertiesChanged",
                        [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes([1, 2, 3])]), .strings([])])
        try server.emit("/x", "org.starling.Unwanted", "Noise", [])
        let got = await withTaskGroup(of: DBusMessageInfo?.self) { group in
            group.addTask { for await s in stream where s.member == "PropertiesChanged" { return s }; return nil }
            group.addTask { try? await Task.sleep(for: .seconds(30)); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let signal = try #require(got)
        #expect(signal.path == "/org/bluez/hci0/dev_00/char0")
        #expect(signal.args.first?.string == "org.bluez.GattCharacteristic1")
        #expect(signal.args.dropFirst().first?.dictionary?["Value"]?.bytes == [1, 2, 3])
        #expect(signal.sender == server.uniqueName)
        var it = other.makeAsyncIterator()
        #expect(await it.next()?.member == "PropertiesChanged")
    }

    @Test func aConnectionNobodyHoldsClosesItself() async throws {
        let bus = try PrivateBus()
        let watcher = try DBusConnection(address: bus.address)
        defer { watcher.close() }
        func owned(_ name: String) async throws -> Bool {
            try await watcher.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                                   [.string(name)]).first?.bool ?? false
        }
        var name = ""
        do {
            let dropped = try DBusConnection(address: bus.address)
            name = dropped.uniqueName
            #expect(try await owned(name))
        }   // no close(): the last reference goes here
        let deadline = ContinuousClock.now + .seconds(30)
        var gone = false
        while !gone, ContinuousClock.now < deadline {
            gone = try await !owned(name)
            if !gone { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(gone)
    }

    /// A call in flight when the bus goes away fails with Disconnected at once
    /// (it used to wait forever: libdbus tells pending calls in a dispatch that
    /// no longer came, and the continuation leaked); so does every later call,
    /// and so do calls on a closed connection.
    @Test func aCallInFlightWhenTheBusGoesAwayFailsAndNoneHangs() async throws {
        let bus = try PrivateBus()
        let service = try DBusConnection(address: bus.address)
        defer { service.close() }
        try await service.requestName("org.starling.Slow")
        let arrived = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        try service.export("/slow") { info in
            guard info.member == "Wait" else { return .values([.string("at once")]) }
            arrived.signal()
            _ = release.wait(timeout: .now() + 20) // answered late, or never
            return .values([.string("late")])
        }
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        // The positive control: an answered call.
        #expect(try await client.call("org.starling.Slow", "/slow", "org.starling.Slow", "Now").first?.string == "at once")

        let started = ContinuousClock.now
        // Watched from outside: a call that is never resumed fails this test instead of hanging it.
        final class Outcome: @unchecked Sendable {
            let lock = NSLock()
            var result: Result<[DBusValue], any Error>?
        }
        let outcome = Outcome()
        Task {
            let r: Result<[DBusValue], any Error>
            do { r = .success(try await client.call("org.starling.Slow", "/slow", "org.starling.Slow", "Wait", timeout: .seconds(120))) } catch { r = .failure(error) }
            outcome.lock.withLock { outcome.result = r }
        }
        // The call is in the service's hands: the bus goes away.
        let inFlight = await Task.detached { arrived.wait(timeout: .now() + 30) == .success }.value
        #expect(inFlight)
        bus.stop()
        var result: Result<[DBusValue], any Error>?
        while result == nil, ContinuousClock.now - started < .seconds(20) {
            try await Task.sleep(for: .milliseconds(20))
            result = outcome.lock.withLock { outcome.result }
        }
        switch result {
        case nil: Issue.record("the call was never resumed after the bus went away")
        case let .success(values)?: Issue.record("answered after the bus went away: \(values)")
        case let .failure(e)?:
            let name = (e as? DBusError)?.name
            #expect(name == "org.freedesktop.DBus.Error.Disconnected" || name == "org.freedesktop.DBus.Error.NoReply", "\(e)")
        }
        #expect(ContinuousClock.now - started < .seconds(15), "failed when the bus went away, not at the call's timeout")
        release.signal()
        // Later calls fail at once, in words.
        do {
            _ = try await client.call("org.starling.Slow", "/slow", "org.starling.Slow", "Now")
            Issue.record("a call on a lost connection was answered")
        } catch let e as DBusError {
            #expect(e.name == "org.freedesktop.DBus.Error.Disconnected", "\(e)")
        }
    }

    @Test func aCallOnAClosedConnectionFailsAtOnce() async throws {
        let bus = try PrivateBus()
        let client = try DBusConnection(address: bus.address)
        #expect(try await client.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId").first?.string?.isEmpty == false)
        client.close()
        do {
            _ = try await client.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId")
            Issue.record("a closed connection answered")
        } catch let e as DBusError {
            #expect(e.name == "org.freedesktop.DBus.Error.Disconnected", "\(e)")
        }
    }

    @Test func aSubtreeAnswersForEveryPathBelowIt() async throws {
        let bus = try PrivateBus()
        let server = try DBusConnection(address: bus.address)
        defer { server.close() }
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        try server.export("/app", subtree: true) { call in .values([.objectPath(call.path ?? "")]) }
        for path in ["/app", "/app/service0", "/app/service0/char0"] {
            let r = try await client.call(server.uniqueName, path, "org.starling.Where", "Am")
            #expect(r == [.objectPath(path)])
        }
    }
}
