import Foundation
import StarlingBlueZ
import StarlingDBus

/// Bluetooth LE through BlueZ, both roles at once (seed 001, chapter 8): as a
/// peripheral it advertises the bitchat service and takes writes; as a central
/// it discovers devices offering the service, connects and subscribes. Each
/// connection is a link, named by the device object BlueZ gives it.
///
/// Two Starling nodes would otherwise connect to each other twice: the one with
/// the lower adapter address acts as the central, the other only as the
/// peripheral. Phones (bitchat) connect as they like.
public final class BLETransport: @unchecked Sendable {
    public static let serviceUUID = "F47B5E2D-4A9E-4C5A-9B3F-8E1D2C3A4B5C"
    public static let characteristicUUID = "A1B2C3D4-E5F6-4A5B-8C9D-0E1F2A3B4C5D"

    public enum Event: Sendable {
        /// A link, and the largest frame it carries (ATT MTU − 3).
        case up(String, maxFrame: Int)
        case frame(String, [UInt8])
        case down(String)
    }

    public enum Failure: Error, CustomStringConvertible {
        case noBus(String)
        case noAdapter(String, available: [String])
        case poweredOff(String)

        public var description: String {
            switch self {
            case let .noBus(why): "Bluetooth is not reachable (BlueZ over D-Bus): \(why). Is bluetoothd running, and may this user use it?"
            case let .noAdapter(a, available):
                "no Bluetooth adapter \(a)" + (available.isEmpty ? " (none at all: is there a radio?)" : "; there is \(available.joined(separator: ", "))")
            case let .poweredOff(a): "Bluetooth adapter \(a) is off: turn it on (bluetoothctl power on)"
            }
        }
    }

    public let adapter: String
    private let bus: DBusConnection
    private let adapterPath: String
    private var peripheral: BlueZPeripheral?
    private var central: BlueZCentral?
    private let lock = NSLock()
    private var centralLinks: [String: BlueZLink] = [:]
    private var peripheralLinks: Set<String> = []
    private var tasks: [Task<Void, Never>] = []
    private var ownAddress = ""
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    public init(adapter: String = "hci0", busAddress: String = DBusConnection.systemBusAddress) throws {
        self.adapter = adapter
        adapterPath = adapter.hasPrefix("/") ? adapter : "/org/bluez/" + adapter
        do { bus = try DBusConnection(address: busAddress) } catch { throw Failure.noBus("\(error)") }
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(4_096))
    }

    /// Checks the adapter, registers the peripheral, starts scanning.
    public func start() async throws {
        let adapters: [String: [String: DBusValue]]
        do { adapters = try await BlueZ.adapters(bus) } catch { throw Failure.noBus("\(error)") }
        guard let props = adapters[adapterPath] else {
            throw Failure.noAdapter(adapter, available: adapters.keys.sorted().map { ($0 as NSString).lastPathComponent })
        }
        guard props["Powered"]?.bool == true else { throw Failure.poweredOff(adapter) }
        ownAddress = props["Address"]?.string ?? ""
        let p = BlueZPeripheral(bus: bus, adapter: adapterPath, serviceUUID: Self.serviceUUID, characteristicUUID: Self.characteristicUUID)
        try await p.start()
        peripheral = p
        let c = BlueZCentral(bus: bus, adapter: adapterPath, serviceUUID: Self.serviceUUID, characteristicUUID: Self.characteristicUUID)
        central = c
        try await c.startDiscovery()
        tasks.append(Task { [weak self] in
            for await w in p.writes {
                guard let self else { return }
                let id = "p:" + w.device
                let new = self.lock.withLock { self.peripheralLinks.insert(id).inserted }
                if new { self.continuation.yield(.up(id, maxFrame: max(20, (w.mtu ?? 23) - 3))) }
                self.continuation.yield(.frame(id, w.bytes))
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                await self?.connectNewPeers()
                try? await Task.sleep(for: .seconds(1))
            }
        })
    }

    /// Connects to devices that offer the service, are not linked yet, and
    /// whose address is above ours (the other of two Starling nodes connects
    /// to us instead).
    private func connectNewPeers() async {
        guard let central, let found = try? await central.candidates() else { return }
        for d in found where d.address > ownAddress {
            let id = "c:" + d.path
            guard lock.withLock({ centralLinks[id] == nil }) else { continue }
            guard let link = try? await central.connect(d.path, timeout: .seconds(5)) else { continue }
            lock.withLock { centralLinks[id] = link }
            continuation.yield(.up(id, maxFrame: max(20, link.mtu - 3)))
            tasks.append(Task { [weak self] in
                for await bytes in link.notifications { self?.continuation.yield(.frame(id, bytes)) }
                self?.lock.withLock { _ = self?.centralLinks.removeValue(forKey: id) }
                self?.continuation.yield(.down(id))
            })
        }
    }

    /// Sends one frame on links: a write to each central-role link; one
    /// notification for all peripheral-role links (BlueZ notifies every subscriber).
    public func send(_ bytes: [UInt8], to ids: [String]) async {
        var notify = false
        for id in ids {
            if id.hasPrefix("p:") { notify = true; continue }
            if let link = lock.withLock({ centralLinks[id] }) { try? await link.write(bytes) }
        }
        if notify { try? peripheral?.notify(bytes) }
    }

    public func stop() async {
        for t in tasks { t.cancel() }
        for link in lock.withLock({ Array(centralLinks.values) }) { await link.disconnect() }
        await central?.stopDiscovery()
        await peripheral?.stop()
        continuation.finish()
        bus.close()
    }
}
