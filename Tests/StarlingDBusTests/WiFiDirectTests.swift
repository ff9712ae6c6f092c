import Foundation
import StarlingDBus
import StarlingTestSupport
import StarlingWiFiDirect
import Testing

/// Wi-Fi Direct group formation (docs/BULK.md) against a simulated
/// wpa_supplicant on a private bus: the objects, methods and signals of its
/// documented D-Bus API (fi.w1.wpa_supplicant1), as far as a group for one
/// transfer needs them. No radio here: what a real supplicant does between the
/// call and the signal is not tested.
@Suite(.serialized, .usesProcesses) struct WiFiDirectTests {
    /// The simulation: interface 0 has a P2P device, interface 1 does not;
    /// GroupAdd and Connect start group 7 on interface 2 (unless `silent`),
    /// Disconnect is recorded.
    final class Supplicant: @unchecked Sendable {
        let bus: DBusConnection
        let lock = NSLock()
        var calls: [String] = []
        var silent = false
        let device = WiFiDirect.root + "/Interfaces/0", station = WiFiDirect.root + "/Interfaces/1"
        let groupInterface = WiFiDirect.root + "/Interfaces/2", groupObject = WiFiDirect.root + "/Groups/7"

        init(_ address: String) async throws {
            bus = try DBusConnection(address: address)
            try await bus.requestName(WiFiDirect.service)
            try bus.export(WiFiDirect.root, subtree: true) { [self] call in handle(call) }
        }

        func handle(_ call: DBusMessageInfo) -> DBusReply {
            let path = call.path ?? "", member = call.member ?? ""
            lock.withLock { calls.append("\(member) \(path)") }
            switch (call.interface ?? "", member) {
            case ("org.freedesktop.DBus.Properties", "Get"):
                let (interface, name) = (call.args.first?.string ?? "", call.args.dropFirst().first?.string ?? "")
                if path == WiFiDirect.root, name == "Interfaces" {
                    return .values([.variant(.array(element: "o", [.objectPath(device), .objectPath(station)]))])
                }
                if path == device, interface == WiFiDirect.p2pDevice, name == "P2PDeviceConfig" {
                    return .values([.variant(.properties(["DeviceName": .string("rosa-laptop")]))])
                }
                return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no \(interface).\(name) at \(path)")
            case ("org.freedesktop.DBus.Properties", "GetAll") where path == groupObject:
                return .values([.properties(["SSID": .bytes(Array("DIRECT-7s-starling".utf8)), "Passphrase": .string("Xq3sTJ8m"),
                                             "Role": .string("GO")])])
            case (WiFiDirect.p2pDevice, "GroupAdd") where path == device, (WiFiDirect.p2pDevice, "Connect") where path == device:
                let role = member == "GroupAdd" ? "GO" : "client"
                if !lock.withLock({ silent }) {
                    // After the reply, as the supplicant does once the group is up.
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { [self] in
                        try? bus.emit(device, WiFiDirect.p2pDevice, "GroupStarted", [.properties([
                            "interface_object": .objectPath(groupInterface), "group_object": .objectPath(groupObject), "role": .string(role),
                        ])])
                    }
                }
                return .values([])
            case (WiFiDirect.p2pDevice, "Disconnect") where path == groupInterface:
                return .values([])
            default:
                return .error(name: "fi.w1.wpa_supplicant1.UnknownError", message: "\(member) is not simulated at \(path)")
            }
        }
    }

    @Test func aGroupIsFormedJoinedAndLeft() async throws {
        let privateBus = try PrivateBus()
        let supplicant = try await Supplicant(privateBus.address)
        defer { supplicant.bus.close() }
        let bus = try DBusConnection(address: privateBus.address)
        defer { bus.close() }
        let direct = WiFiDirect(bus: bus)
        // Only the interface with a P2P device.
        #expect(try await direct.devices() == [supplicant.device])
        // The sender owns a group; its name and passphrase come from the group object.
        let owned = try await direct.formGroup(on: supplicant.device, timeout: .seconds(10))
        #expect(owned == WiFiDirect.Group(interfaceObject: supplicant.groupInterface, groupObject: supplicant.groupObject, role: "GO",
                                          ssid: "DIRECT-7s-starling", passphrase: "Xq3sTJ8m"))
        try await direct.leave(owned)
        #expect(supplicant.lock.withLock { supplicant.calls.contains("Disconnect \(supplicant.groupInterface)") }, "the group ends on its interface")
        // The receiver joins one.
        let joined = try await direct.join(on: supplicant.device, peer: WiFiDirect.root + "/Peers/a2c3e4f5a6b7", timeout: .seconds(10))
        #expect(joined.role == "client" && joined.ssid == "DIRECT-7s-starling")
        // No group ever starts: said in words at the timeout (the control above started one).
        supplicant.lock.withLock { supplicant.silent = true }
        await #expect(throws: WiFiDirect.Failure.self) { _ = try await direct.formGroup(on: supplicant.device, timeout: .milliseconds(500)) }
        // The supplicant refuses: its error comes back named.
        do {
            _ = try await direct.formGroup(on: supplicant.station, timeout: .seconds(1))
            Issue.record("a station without P2P formed a group")
        } catch let e as DBusError {
            #expect(e.name == "fi.w1.wpa_supplicant1.UnknownError")
        }
    }
}
