import StarlingCrypto
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// What a typed name picks: one, several (never chosen between silently: the
/// face lists them, each as it can be typed to pick it), or none.
public enum NameMatch<Item> {
    case one(Item)
    case several([Item])
    case none

    public var one: Item? { if case let .one(item) = self { item } else { nil } }
}

extension NameMatch: Sendable where Item: Sendable {}
extension NameMatch: Equatable where Item: Equatable {}

/// The rules by which every face turns a typed name into a peer, a contact or
/// a group (docs/MESSENGER.md, "Names"): the messenger's `resolve`, the chat's
/// commands, `send --to`, `contact verify NAME` and the groups' members all ask
/// here, so a name means the same thing in each.
///
/// - A peer here: its nickname exactly, or `NAME#abcd` with the start (4 digits
///   or more) of its peer ID.
/// - A contact: its name in any case, `NAME#0a1b` with the start of its user
///   ID, or the start of its user ID alone (4 digits or more).
/// - A group: its name in any case, or the start of its ID (4 digits or more).
public enum Names {
    /// The digits of an ID that pick one among several with one name.
    public static let shownDigits = 4

    /// A peer here by what its announce calls it.
    public static func peer<Peer>(_ name: String, among peers: [PeerID: Peer], nickname: (Peer) -> String) -> NameMatch<PeerID> {
        var matches = peers.filter { nickname($0.value) == name }.map(\.key)
        let parts = name.split(separator: "#", omittingEmptySubsequences: false)
        if matches.isEmpty, parts.count == 2, parts[1].count >= shownDigits {
            let digits = parts[1].lowercased()
            matches = peers.filter { nickname($0.value) == parts[0] && $0.key.description.hasPrefix(digits) }.map(\.key)
        }
        return match(matches.sorted { $0.description < $1.description })
    }

    /// How a peer is typed to pick it among others with its nickname.
    public static func label(_ nickname: String, peer: PeerID) -> String {
        "\(nickname)#\(peer.description.prefix(shownDigits))"
    }

    /// A contact by the name on its card, `NAME#` the start of its user ID, or that start alone.
    public static func contact<Item>(_ name: String, among all: [Item], card: (Item) -> ContactCard) -> NameMatch<Item> {
        let lower = name.lowercased()
        var matches = all.filter { card($0).displayName.lowercased() == lower }
        let parts = lower.split(separator: "#", omittingEmptySubsequences: false)
        if matches.isEmpty, parts.count == 2, parts[1].count >= shownDigits {
            matches = all.filter { card($0).displayName.lowercased() == parts[0] && card($0).userID.description.hasPrefix(parts[1]) }
        }
        if matches.isEmpty, lower.count >= shownDigits, lower.allSatisfy(\.isHexDigit) {
            matches = all.filter { card($0).userID.description.hasPrefix(lower) }
        }
        return match(matches.sorted { card($0).userID.description < card($1).userID.description })
    }

    /// How a contact is typed to pick it among others with its name.
    public static func label(_ card: ContactCard) -> String {
        "\(card.displayName)#\(card.userID.description.prefix(shownDigits))"
    }

    /// A group by its name or the start of its ID (hex).
    public static func group<Item>(_ name: String, among all: [Item], groupName: (Item) -> String, groupID: (Item) -> String) -> NameMatch<Item> {
        let lower = name.lowercased()
        guard !lower.isEmpty else { return .none }
        let byName = all.filter { groupName($0).lowercased() == lower }
        if !byName.isEmpty { return match(byName) }
        return match(lower.count >= shownDigits ? all.filter { groupID($0).hasPrefix(lower) } : [])
    }

    static func match<Item>(_ items: [Item]) -> NameMatch<Item> {
        switch items.count {
        case 0: .none
        case 1: .one(items[0])
        default: .several(items)
        }
    }
}
