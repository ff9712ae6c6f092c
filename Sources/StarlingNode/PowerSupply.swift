import Foundation
import StarlingStately

/// Battery readings from Linux's /sys/class/power_supply: the first supply of
/// type Battery gives the level (`capacity`, 0–100) and `status`; a Mains or
/// USB supply that is `online` counts as charging. No battery: nil.
public struct SysfsPowerProvider: PowerProvider {
    public let root: URL

    public init(root: URL = URL(fileURLWithPath: "/sys/class/power_supply")) { self.root = root }

    public func read() -> PowerReading? {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: root.path) else { return nil }
        func value(_ supply: String, _ file: String) -> String? {
            (try? String(contentsOf: root.appendingPathComponent(supply).appendingPathComponent(file), encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var battery: (level: Double, status: String)?
        var mains = false
        for name in names.sorted() {
            switch value(name, "type") {
            case "Battery" where battery == nil:
                if let capacity = value(name, "capacity").flatMap(Double.init) {
                    battery = (capacity / 100, value(name, "status") ?? "Unknown")
                }
            case "Mains", "USB", "USB_C", "USB_PD":
                if value(name, "online") == "1" { mains = true }
            default:
                break
            }
        }
        guard let battery else { return nil }
        let charging = mains || battery.status == "Charging" || battery.status == "Full"
        return PowerReading(level: battery.level, charging: charging)
    }
}
