import Foundation
import Testing
import StarlingNode
import StarlingStately

@Suite struct PowerSupplyTests {
    /// A fake /sys/class/power_supply with the given supplies (name → files).
    func sysfs(_ supplies: [String: [String: String]]) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("power-\(UUID().uuidString)")
        for (name, files) in supplies {
            let dir = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (file, value) in files { try Data((value + "\n").utf8).write(to: dir.appendingPathComponent(file)) }
        }
        return root
    }

    @Test func readsTheBatteryAndTheMains() throws {
        let discharging = try sysfs(["BAT0": ["type": "Battery", "capacity": "23", "status": "Discharging"],
                                     "AC": ["type": "Mains", "online": "0"]])
        let r = try #require(SysfsPowerProvider(root: discharging).read())
        #expect(abs(r.level - 0.23) < 1e-9 && !r.charging)
        #expect(BatteryOptimizer().mode(for: r) == .powerSaver)

        let plugged = try sysfs(["BAT1": ["type": "Battery", "capacity": "5", "status": "Not charging"],
                                 "ADP1": ["type": "Mains", "online": "1"]])
        let p = try #require(SysfsPowerProvider(root: plugged).read())
        #expect(p.charging)
        #expect(BatteryOptimizer().mode(for: p) == .performance)
    }

    @Test func noBatteryMeansNoReading() throws {
        let desktop = try sysfs(["AC": ["type": "Mains", "online": "1"]])
        #expect(SysfsPowerProvider(root: desktop).read() == nil)
        #expect(SysfsPowerProvider(root: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)")).read() == nil)
        let garbage = try sysfs(["BAT0": ["type": "Battery", "capacity": "lots"]])
        #expect(SysfsPowerProvider(root: garbage).read() == nil)
    }
}
