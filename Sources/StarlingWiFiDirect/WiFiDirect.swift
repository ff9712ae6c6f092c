import Foundation
import StarlingDBus

/// Wi-Fi Direct groups through wpa_supplicant's D-Bus API
/// (`fi.w1.wpa_supplicant1`), for a bulk transfer between two machines that
/// share no network (docs/BULK.md, "Wi-Fi Direct").
///
/// The sender forms a group and owns it (``formGroup(on:timeout:)``); the
/// receiver joins it (``join(on:peer:timeout:)``); the TCP transfer then runs
/// over the group's interface as over any LAN, sealed end to end; either side
/// ends it (``leave(_:)``). Tested against a simulated wpa_supplicant on a
/// private bus, written from its documented D-Bus API; never against a radio.
public struct WiFiDirect: Sendable {
    public static let service = "fi.w1.wpa_supplicant1"
    public static let root = "/fi/w1/wpa_supplicant1"
    public static let p2pDevice = "fi.w1.wpa_supplicant1.Interface.P2PDevice"
    public static let group = "fi.w1.wpa_supplicant1.Group"
    static let properties = "org.freedesktop.DBus.Properties"

    public let bus: DBusConnection

    public init(bus: DBusConnection) { self.bus = bus }

    /// A group this machine is in: the interface object made for it (where
    /// `Disconnect` ends it), the group object, this side's role ("GO" for
    /// the owner, "client"), and the network's name and passphrase.
    public struct Group: Sendable, Hashable {
        public var interfaceObject: String
        public var groupObject: String
        public var role: String
        public var ssid: String
        public var passphrase: String?
        public init(interfaceObject: String, groupObject: String, role: String, ssid: String, passphrase: String?) {
            self.interfaceObject = interfaceObject
            self.groupObject = groupObject
            self.role = role
            self.ssid = ssid
            self.passphrase = passphrase
        }
    }

    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// wpa_supplicant's interface objects that have a P2P device.
    public func devices() async throws -> [String] {
        let reply = try await bus.call(Self.service, Self.root, Self.properties, "Get", [.string(Self.service), .string("Interfaces")])
        var out: [String] = []
        for path in reply.first?.array?.compactMap(\.string) ?? [] {
            do {
                _ = try await bus.call(Self.service, path, Self.properties, "Get", [.string(Self.p2pDevice), .string("P2PDeviceConfig")])
                out.append(path)
            } catch is DBusError {
                continue // an interface without P2P (a plain station)
            }
        }
        return out
    }

    /// The sender's side: a group of its own, as its owner, once started.
    public func formGroup(on device: String, timeout: Duration = .seconds(30)) async throws -> Group {
        try await whenStarted(on: device, timeout: timeout) {
            _ = try await bus.call(Self.service, device, Self.p2pDevice, "GroupAdd", [.properties(["persistent": .bool(false)])])
        }
    }

    /// The receiver's side: joins the group the peer (a peer object of this
    /// device, as `Find` lists them) owns, by push button, once started.
    public func join(on device: String, peer: String, timeout: Duration = .seconds(30)) async throws -> Group {
        try await whenStarted(on: device, timeout: timeout) {
            _ = try await bus.call(Self.service, device, Self.p2pDevice, "Connect",
                                   [.properties(["peer": .objectPath(peer), "wps_method": .string("pbc"), "join": .bool(true)])])
        }
    }

    /// Ends a group (its transfer saved, declined or given up).
    public func leave(_ group: Group) async throws {
        _ = try await bus.call(Self.service, group.interfaceObject, Self.p2pDevice, "Disconnect")
    }

    /// Runs `start`, then waits for the device's GroupStarted (listened for
    /// before `start`, so that it cannot be missed) and reads the group.
    func whenStarted(on device: String, timeout: Duration, _ start: () async throws -> Void) async throws -> Group {
        try await bus.addMatch("type='signal',sender='\(Self.service)',interface='\(Self.p2pDevice)',member='GroupStarted',path='\(device)'")
        let signals = bus.signals
        try await start()
        let started = try await withThrowingTaskGroup(of: [String: DBusValue]?.self) { g in
            g.addTask {
                for await s in signals where s.member == "GroupStarted" && s.path == device {
                    if let p = s.args.first?.dictionary { return p }
                }
                return nil
            }
            g.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { g.cancelAll() }
            return try await g.next() ?? nil
        }
        guard let started else {
            throw Failure(description: "no Wi-Fi Direct group started on \(device) within \(timeout.components.seconds) s")
        }
        guard let groupObject = started["group_object"]?.string, let interfaceObject = started["interface_object"]?.string else {
            throw Failure(description: "wpa_supplicant said a group started without naming it")
        }
        let all = try await bus.call(Self.service, groupObject, Self.properties, "GetAll", [.string(Self.group)]).first?.dictionary ?? [:]
        return Group(interfaceObject: interfaceObject, groupObject: groupObject, role: started["role"]?.string ?? "",
                     ssid: String(decoding: all["SSID"]?.bytes ?? [], as: UTF8.self), passphrase: all["Passphrase"]?.string)
    }
}
