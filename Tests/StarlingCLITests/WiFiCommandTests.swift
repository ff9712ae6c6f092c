import Foundation
import StarlingTestSupport
import Testing

/// `starling wifi` between real processes: the device emulator and the client.
@Suite(.serialized, .usesProcesses) struct WiFiCommandTests {
    static func networksFile() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("networks-\(UUID().uuidString).json")
        try Data("""
        {"networks": [
          {"ssid": "Home", "rssi": -48, "security": "wpa2", "channel": 6, "password": "correct horse"},
          {"ssid": "Office", "rssi": -62, "security": "wpa3", "channel": 36, "password": "s3cret"},
          {"ssid": "Café", "rssi": -80, "security": "open", "channel": 11}
        ], "scanDelay": 50, "connectDelay": 200}
        """.utf8).write(to: url)
        return url.path
    }

    /// A device emulator on a port the system gives (a port picked at random collided
    /// with another test's socket once on a loaded machine: the device never started).
    static func device(_ extra: [String]) async throws -> (LiveProcess, UInt16, String) {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("wifi-\(UUID().uuidString).json").path
        let p = try LiveProcess(["wifi", "device", "--networks", try networksFile(), "--port", "0", "--store", store,
                                 "--duration", "120", "--json"] + extra) // stopped by each test; long enough for a loaded machine
        let started = try #require(await p.waitFor(seconds: 60) { $0["event"] as? String == "started" }, "\(p.text)")
        let at = try #require(started["at"] as? String)
        let port = try #require(at.split(separator: ":").last.flatMap { UInt16($0) }, "\(at)")
        return (p, port, store)
    }

    @Test func scanAndSecuredProvisioningAcrossProcesses() async throws {
        let (device, port, store) = try await Self.device(["--secure", "--pop", "K7QF2M9X"]) // --secure alone refuses clear
        defer { device.stop() }
        #expect(await device.waitFor { $0["event"] as? String == "pop" }?["code"] as? String == "K7QF2M9X")
        let scan = try await StarlingProcess.run(["wifi", "scan", "--device", "127.0.0.1:\(port)"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let lines = scan.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.contains("▂▄▆█  Home") == true)          // strongest first, four bars
        #expect(lines.last?.contains("Café") == true && lines.last?.contains("▂ ") == true)

        // Without --pop the phone side does not send a password at all, unless told --insecure.
        let unsaid = try await StarlingProcess.run(["wifi", "provision", "--device", "127.0.0.1:\(port)", "--ssid", "Home",
                                                    "--password", "correct horse"])
        #expect(unsaid.status == 64 && unsaid.stderr.contains("would travel in clear") && unsaid.stderr.contains("--insecure"), "\(unsaid.stderr)")
        // Told so, it sends it in clear, and the secured device refuses it.
        let clear = try await StarlingProcess.run(["wifi", "provision", "--device", "127.0.0.1:\(port)", "--ssid", "Home",
                                             "--password", "correct horse", "--insecure"])
        #expect(clear.status == 1)
        #expect(clear.stdout.contains("securedSessionRequired"), "\(clear.stdout)")

        let wrongCode = try await StarlingProcess.run(["wifi", "provision", "--device", "127.0.0.1:\(port)", "--ssid", "Home",
                                                 "--password", "correct horse", "--pop", "K7QF2M9Y"])
        #expect(wrongCode.status == 1)
        #expect(wrongCode.stdout.contains("secured mode failed"), "\(wrongCode.stdout)")

        let ok = try await StarlingProcess.run(["wifi", "provision", "--device", "127.0.0.1:\(port)", "--ssid", "Home",
                                          "--pop", "K7QF2M9X", "--json"], environment: ["STARLING_WIFI_PASSWORD": "correct horse"])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains(#""secured":true"#))
        #expect(ok.stdout.contains(#""ip":"192.168.1.100""#) && ok.stdout.contains(#""state":"connected""#))
        #expect(await device.waitFor { $0["event"] as? String == "status" && $0["state"] as? String == "connected" } != nil)
        let saved = try String(contentsOfFile: store, encoding: .utf8)
        #expect(saved.contains("correct horse"))
        let mode = try FileManager.default.attributesOfItem(atPath: store)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aWrongPasswordFailsAndSaysSo() async throws {
        let (device, port, _) = try await Self.device([])
        defer { device.stop() }
        #expect(await device.waitFor { $0["event"] as? String == "started" } != nil)
        let good = try await StarlingProcess.run(["wifi", "provision", "--device", "127.0.0.1:\(port)", "--ssid", "Home",
                                                  "--password", "correct horse", "--insecure"]) // a v1 device: in clear, said so
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        let r = try await StarlingProcess.run(["wifi", "provision", "--device", "127.0.0.1:\(port)", "--ssid", "Office", "--password", "guess",
                                               "--insecure"])
        #expect(r.status == 1)
        #expect(r.stdout.contains("connection to Office failed"), "\(r.stdout)")
        #expect(r.stdout.contains("! could not join Office: the password was refused; keeping Home, which worked"), "\(r.stdout)")
        // The device goes back to the network that worked (its connect takes 200 ms here).
        var status = try await StarlingProcess.run(["wifi", "status", "--device", "127.0.0.1:\(port)"])
        let deadline = Date().addingTimeInterval(20)
        while !status.stdout.contains("connected to Home"), Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            status = try await StarlingProcess.run(["wifi", "status", "--device", "127.0.0.1:\(port)"])
        }
        #expect(status.stdout.contains("* connected to Home: 192.168.1.100"), "\(status.stdout)\(status.stderr)")
        let none = try await StarlingProcess.run(["wifi", "scan", "--device", "127.0.0.1:1"])
        #expect(none.status != 0)
        #expect(none.stderr.contains("no WiFiSet device answered"))
    }
}
