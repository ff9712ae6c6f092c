import StarlingMesh

/// Seed 000's power modes: how often a state is broadcast, and how much of the
/// radio a node spends (the link budget and the scan duty cycle a BLE
/// transport follows).
public enum PowerMode: String, CaseIterable, Hashable, Sendable {
    case performance
    case balanced
    case powerSaver = "power-saver"
    case ultraLowPower = "ultra-low-power"

    /// Between two broadcasts of an unchanged state (SOS: always 5 s).
    public var broadcastInterval: Millis {
        switch self {
        case .performance: 10_000
        case .balanced: 15_000
        case .powerSaver: 30_000
        case .ultraLowPower: 60_000
        }
    }

    /// Links kept at most (phones hold 6–8; fewer in the saving modes).
    public var linkBudget: Int {
        switch self {
        case .performance: 8
        case .balanced: 6
        case .powerSaver: 4
        case .ultraLowPower: 2
        }
    }

    /// The share of time spent scanning for peers.
    public var scanDutyCycle: Double {
        switch self {
        case .performance: 1.0
        case .balanced: 0.5
        case .powerSaver: 0.25
        case .ultraLowPower: 0.1
        }
    }

    /// Accepts the raw names and a few spellings people type.
    public init?(name: String) {
        switch name.lowercased() {
        case "performance": self = .performance
        case "balanced": self = .balanced
        case "power-saver", "powersaver", "saver", "power_saver": self = .powerSaver
        case "ultra-low-power", "ultralowpower", "ultra", "ultra_low_power": self = .ultraLowPower
        default: return nil
        }
    }
}

/// A battery reading: charge in [0, 1], and whether it is charging (or on mains).
public struct PowerReading: Hashable, Sendable {
    public var level: Double
    public var charging: Bool
    public init(level: Double, charging: Bool) {
        self.level = min(1, max(0, level))
        self.charging = charging
    }
}

/// Where readings come from (on Linux, /sys/class/power_supply; in tests, a value).
public protocol PowerProvider: Sendable {
    /// nil: no battery (a desktop, a Pi on mains).
    func read() -> PowerReading?
}

/// Picks the power mode from the battery (seed 000, "Battery Optimization"):
/// charging or above 80% → performance; below 10% → ultra low power; below
/// 30% → power saver; otherwise balanced. No battery: balanced. An override
/// (a flag) wins. In the background every interval doubles.
public struct BatteryOptimizer: Hashable, Sendable {
    public var override: PowerMode?
    public var background = false

    public init(override: PowerMode? = nil) { self.override = override }

    public func mode(for reading: PowerReading?) -> PowerMode {
        if let override { return override }
        guard let r = reading else { return .balanced }
        if r.charging || r.level > 0.8 { return .performance }
        if r.level < 0.1 { return .ultraLowPower }
        if r.level < 0.3 { return .powerSaver }
        return .balanced
    }

    /// Whether to save battery (the seed's `shouldOptimizeForBattery`).
    public func shouldOptimize(for reading: PowerReading?) -> Bool {
        let m = mode(for: reading)
        return (reading.map { $0.level < 0.3 && !$0.charging } ?? false) || m == .powerSaver || m == .ultraLowPower
    }

    public func broadcastInterval(for reading: PowerReading?) -> Millis {
        mode(for: reading).broadcastInterval * (background ? 2 : 1)
    }
}
