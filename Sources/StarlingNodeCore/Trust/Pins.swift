import StarlingCrypto
import StarlingMesh

/// Signing keys pinned to Noise keys (docs/PROTOCOL.md, "Authentication and
/// freshness"): the first verified announce of a Noise key pins its signing
/// key, and an announce with another is refused. 4,096 at most; past that the
/// newest pin goes (as the peer table's newest arrival does), so a flood of
/// identities cannot push out the pins of the peers that were here before it.
struct Pins: Sendable {
    static let capacity = 4_096
    /// Each Noise key's fingerprint, with its pinned signing key.
    private(set) var all: [Fingerprint: [UInt8]] = [:]
    private var order: [Fingerprint] = []

    var count: Int { all.count }
    subscript(_ fingerprint: Fingerprint) -> [UInt8]? { all[fingerprint] }

    /// Pins on first use: whether this pin is new.
    mutating func pinFirst(_ fingerprint: Fingerprint, _ key: [UInt8]) -> Bool {
        guard all[fingerprint] == nil else { return false }
        makeRoom()
        all[fingerprint] = key
        order.append(fingerprint)
        return true
    }

    /// Pins from a source the application trusts (an earlier run, a contact card): replaces a pin made on first use.
    mutating func set(_ key: [UInt8], for fingerprint: Fingerprint) {
        if all[fingerprint] == nil {
            makeRoom()
            order.append(fingerprint)
        }
        all[fingerprint] = key
    }

    private mutating func makeRoom() {
        if order.count >= Self.capacity { all[order.removeLast()] = nil }
    }
}
