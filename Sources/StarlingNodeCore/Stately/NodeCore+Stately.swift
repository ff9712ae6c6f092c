import StarlingMesh
import StarlingStately

/// Stately's commands and queries on the node (``StatelyFeature`` holds its state).
extension NodeCore {
    private var stately: StatelyEngine { statelyFeature.engine }

    /// Sets this node's state and broadcasts it at once (`invisible` stops broadcasting).
    public mutating func setStatus(_ state: StateKind, now: Millis) {
        usingStately(now) { stately, context in stately.set(state, context: &context) }
    }

    /// Ends an SOS: the state before it goes out at once.
    public mutating func clearSOS(now: Millis) {
        usingStately(now) { stately, context in stately.clearSOS(&context) }
    }

    /// A battery reading (the runtime reads it every minute).
    public mutating func updatePower(_ reading: PowerReading?, now: Millis) {
        statelyFeature.engine.update(reading: reading, now: now)
    }

    public var status: StateKind { stately.current }
    /// The states around, SOS first, blocked peers left out.
    public var statusBoard: [StatelyEngine.PeerState] { stately.sortedBoard.filter { !isBlocked($0.senderID) } }
    public var powerMode: PowerMode { stately.powerMode }
    public var statusInterval: Millis { stately.interval }
    public var statelyStatistics: StatelyEngine.Statistics { stately.statistics }

    /// Stately is always on (it has a channel of its own; a state is never sent unasked).
    mutating func usingStately(_ now: Millis, _ body: (inout StatelyFeature, inout NodeContext) -> Void) {
        using(\.statelyFeatureSlot, now: now, body)
    }
}
