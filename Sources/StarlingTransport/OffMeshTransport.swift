import StarlingWire

/// What an off-mesh transport tells the node.
public enum OffMeshEvent: Hashable, Sendable {
    /// A peer can be reached this way now (its key was given), or no longer.
    case reachable(PeerID, Bool)
    /// A private payload from a peer arrived (its sender authenticated by the
    /// transport: for Nostr, the key that signed the seal is the peer's).
    case received(NoisePayload, from: PeerID)
    /// The transport's far end took the payload with this ticket (a Nostr relay or the Ya OK server stored it).
    case accepted(ticket: String)
    /// It did not, and why (words for a person).
    case failed(ticket: String, reason: String)
    /// Something a person should know: a Nostr relay connected or lost, the proxy down.
    case notice(String)
}

/// A way to reach a peer by who it is rather than by a link (docs/GLOSSARY.md,
/// "off-mesh transport"): Nostr, or the Ya OK server. The node core decides when to use one:
/// only for a peer it has no mesh route to, and only a peer the application
/// made reachable this way (the transport's `reachable` events). The
/// transport carries whole Noise payloads (messages and receipts), sealed by
/// its own means.
public protocol OffMeshTransport: AnyObject, Sendable {
    /// A short name ("nostr"), shown as the way a message went.
    var name: String { get }
    var events: AsyncStream<OffMeshEvent> { get }
    func start() async throws
    /// Sends `payload` to `peer`; `ticket` names it in the events that follow.
    func send(_ payload: NoisePayload, to peer: PeerID, ticket: String)
    /// The node acknowledged the private message with this ID (it is stored):
    /// a transport whose server holds it until told may tell it now.
    func acknowledged(_ messageID: String)
    func stop() async
}

extension OffMeshTransport {
    public func acknowledged(_ messageID: String) {}
}
