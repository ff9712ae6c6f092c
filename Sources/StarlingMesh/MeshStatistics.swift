/// Counters a node keeps about the mesh as it sees it (seed 001, chapter 7).
public struct MeshStatistics: Hashable, Sendable, Codable {
    /// Packets this node originated.
    public var originated = 0
    /// Distinct packets received (first copies).
    public var received = 0
    /// Of those, received straight from their originator (hop count 1).
    public var direct = 0
    /// Of those, received through at least one relay.
    public var relayed = 0
    /// Sum of hop counts of received packets, for the average.
    public var hopSum = 0
    /// Copies dropped as duplicates.
    public var duplicatesBlocked = 0
    /// Packets handed to the application (for us, or broadcast).
    public var delivered = 0
    public var relaysScheduled = 0
    public var relaysExecuted = 0
    /// Pending relays cancelled because the packet was heard enough.
    public var relaysCancelled = 0
    /// Broadcasts sent again (the policy saw no sign that a neighbour got them).
    public var retransmissions = 0
    /// Relays the policy declined, or the TTL forbade.
    public var relaysDeclined = 0
    /// Relays refused because too many were pending.
    public var relaysOverflowed = 0
    /// Radio transmissions (one per send on a set of links, fragments counted).
    public var transmissions = 0
    public var fragmentsSent = 0
    /// Packets too large for a link even in fragments (more than receivers accept): not sent.
    public var unsendable = 0
    public var messagesReassembled = 0
    public var malformed = 0
    /// Packets that arrived with a TTL above this node's own, taken as its own.
    public var ttlClamped = 0
    /// Packets from blocked senders, dropped on arrival.
    public var blockedDropped = 0
    public var syncRequestsSent = 0
    /// Requests for stalled fragment streams sent.
    public var streamRequestsSent = 0
    /// Sync requests not answered: past a link's rate (8 in 30 s).
    public var syncRequestsRefused = 0
    /// Packets sent back in answer to sync requests.
    public var syncRepliesSent = 0
    /// Bytes of sync requests sent and of the replies to others' requests.
    public var syncRequestBytes = 0
    public var syncReplyBytes = 0
    /// Packets learnt from a sync reply and spread on (a partition's repair).
    public var repairsRelayed = 0

    /// Directed packets this node originated with a source route.
    public var routed = 0
    /// Directed packets relayed to one link only: the recipient's, or the route's next hop.
    public var unicastForwards = 0
    /// Routed packets whose next hop was not a neighbour: flooded instead.
    public var routeFallbacks = 0
    /// Packets kept for a favourite out of reach, and handed over when it came back.
    public var held = 0
    public var handedOver = 0

    public init() {}

    public var averageHops: Double { received == 0 ? 0 : Double(hopSum) / Double(received) }
    /// Executed ÷ scheduled.
    public var relayEfficiency: Double { relaysScheduled == 0 ? 0 : Double(relaysExecuted) / Double(relaysScheduled) }
    /// Duplicates ÷ all copies received.
    public var duplicateRate: Double {
        let all = received + duplicatesBlocked
        return all == 0 ? 0 : Double(duplicatesBlocked) / Double(all)
    }
}
