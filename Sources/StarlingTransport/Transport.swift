import StarlingWire

/// What a transport tells the node: links come and go with the largest frame
/// they carry, and frames arrive on them.
///
/// A link is named by a key the transport chooses (an address, a device
/// path); keys are unique within one transport.
public enum TransportEvent: Hashable, Sendable {
    /// A link is up; `maxFrame` is the largest frame it carries in one piece
    /// (nil: the node's default).
    case up(String, maxFrame: Int?)
    /// A frame arrived on a link, on one of its two channels.
    case frame(String, [UInt8], FrameChannel)
    /// Something that is not a frame was heard on the link (a keepalive).
    case heard(String)
    /// These links' largest frame changed.
    case resized([String], maxFrame: Int)
    case down(String)
    /// Something a person should know of the transport as a whole (Bluetooth
    /// went away, Bluetooth is back), said once each time.
    case notice(String)
}

/// One way of reaching neighbours: UDP datagrams, Bluetooth LE through BlueZ,
/// an in-memory hub, and next a Ya OK server or Nostr. The node runtime
/// starts each transport, reads its events, and hands it frames to send; the
/// node core behind it knows only links.
public protocol Transport: AnyObject, Sendable {
    /// A short name ("udp", "ble", "memory"): link addresses are shown as
    /// `name key` (UDP's as the bare address).
    var name: String { get }
    /// The transport's events, from ``start()`` until ``stop()``.
    var events: AsyncStream<TransportEvent> { get }
    /// Starts reaching neighbours; throws with words for a person when it cannot.
    func start() async throws
    /// Sends one frame to these links, on this channel. Failures drop the
    /// frame, as radio loss would.
    func send(_ frame: [UInt8], on channel: FrameChannel, to links: [String])
    /// Lets a link go (the node gave up on it). A `down` event follows, unless
    /// the transport has no such link.
    func close(_ link: String) async
    /// Stops: every link ends, and the events finish.
    func stop() async
}

extension Transport {
    /// How a link of this transport is shown to a person.
    public func address(of link: String) -> String { name == "udp" ? link : "\(name) \(link)" }
}
