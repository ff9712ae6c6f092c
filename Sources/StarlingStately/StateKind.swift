/// The ten states of seed 000, as they travel in the JSON (`"state"`), with
/// their emoji (the seed's encoding lost three: away 🏃, eating 🍽️, traveling ✈️).
public enum StateKind: String, CaseIterable, Hashable, Sendable, Codable {
    case sleeping
    case sos
    case redCircle = "red_circle"
    case available
    case busy
    case away
    /// This node stops broadcasting; others see its state expire.
    case invisible
    case working
    case eating
    case traveling

    public var emoji: String {
        switch self {
        case .sleeping: "💤"
        case .sos: "🆘"
        case .redCircle: "🔴"
        case .available: "✅"
        case .busy: "🔶"
        case .away: "🏃"
        case .invisible: "👻"
        case .working: "💼"
        case .eating: "🍽️"
        case .traveling: "✈️"
        }
    }

    public var displayName: String {
        switch self {
        case .sleeping: "Sleeping"
        case .sos: "SOS — needs help"
        case .redCircle: "Do not disturb"
        case .available: "Available"
        case .busy: "Busy"
        case .away: "Away"
        case .invisible: "Invisible"
        case .working: "Working"
        case .eating: "Eating"
        case .traveling: "Traveling"
        }
    }

    /// Accepts the JSON name (`red_circle`) and a few spellings people type.
    public init?(name: String) {
        let n = String(name.lowercased().map { $0 == "-" ? "_" : $0 })
        switch n {
        case "dnd", "do_not_disturb", "redcircle": self = .redCircle
        case "travelling": self = .traveling
        default:
            guard let k = StateKind(rawValue: n) else { return nil }
            self = k
        }
    }
}
