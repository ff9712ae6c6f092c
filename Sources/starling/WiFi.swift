import ArgumentParser
import Foundation
import StarlingDBus
import StarlingBluetooth
import StarlingNode
import StarlingTransport
import StarlingWiFiSet
import StarlingWire

/// `starling wifi`: WiFiSet (seed 003) — provision a device's Wi-Fi over a
/// GATT-like link. Both ends: a device emulator, and the phone's client.
struct WiFi: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wifi",
        abstract: "Provision a device's Wi-Fi over BLE (WiFiSet): the device emulator, and the phone's scan and provision.",
        discussion: """
        The device and the client talk over a GATT-like link on 127.0.0.1 (the same code will \
        run over BLE). A device started with --secure shows a proof-of-possession code; the \
        client gives it with --pop, and the password then travels sealed. Without --pop the \
        client sends no password unless told --insecure, and a --secure device refuses it.

        Examples:
          starling wifi device --networks networks.json --secure
          starling wifi scan
          starling wifi provision --ssid Home --pop K7QF2M9X
        """,
        subcommands: [Device.self, Scan.self, Provision.self, Status.self]
    )

    static let defaultPort: UInt16 = 47390

    struct Device: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Emulate a WiFiSet device (the ESP32 side) with a simulated Wi-Fi environment.")
        @Option(help: "The networks the device sees: JSON [{\"ssid\", \"rssi\", \"security\", \"channel\", \"password\"}] (or {\"networks\": [...]}).")
        var networks: String
        @Option(help: "UDP port on 127.0.0.1.") var port: UInt16 = WiFi.defaultPort
        @Flag(help: "Serve over Bluetooth LE (BlueZ) as a GATT peripheral instead of the loopback link.") var ble = false
        @Option(help: "The Bluetooth adapter for --ble.") var adapter = "hci0"
        @Option(help: "Largest ATT MTU the device accepts (23–517).") var mtu = 512
        @Flag(help: "Do not cut long messages into several notifications (as a v1 device that cannot).") var noChunking = false
        @Flag(help: "Secured mode, with a proof-of-possession code shown here: credentials sent in clear are refused.") var secure = false
        @Flag(help: "The same as --secure (kept for scripts that say it).") var secureOnly = false
        @Flag(help: "With --secure, also take credentials in clear from a v1 phone that cannot seal them (anyone in radio range reads them).")
        var allowClear = false
        @Option(help: "The proof-of-possession code (default: 8 random characters).") var pop: String?
        @Option(help: "Where credentials are stored (default: the data directory's wifi-credentials.json).") var store: String?
        @Option(help: "The data directory.") var dataDir: String?
        @Option(help: "Seconds a connection attempt may take.") var connectTimeout = 30.0
        @Option(help: "Stop after this many seconds.") var duration: Double?
        @Flag(help: "One JSON object per line.") var json = false

        func validate() throws {
            guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be 23 to 517") }
        }

        func run() async throws {
            let environment: WiFiEnvironment
            do { environment = try WiFiEnvironment.load(URL(fileURLWithPath: networks)) } catch {
                throw RuntimeFailure("--networks \(networks): \(error)")
            }
            var config = WiFiSetDevice.Configuration()
            config.mtu = mtu
            config.chunking = !noChunking
            config.connectTimeout = UInt64(connectTimeout * 1000)
            let code = pop ?? Self.randomCode()
            // Secured: in clear only when asked for in words (--allow-clear).
            if secure || secureOnly || pop != nil { config.security = allowClear ? .optional(pop: code) : .required(pop: code) }
            let storeURL = store.map { URL(fileURLWithPath: $0) }
                ?? DataDirectory(explicit: dataDir).file("wifi-credentials.json")
            let link: any WiFiSetPeripheral
            let whereText: String
            var close: @Sendable () async -> Void
            var bleBus: DBusConnection?
            if ble {
                let bus: DBusConnection
                do { bus = try DBusConnection(address: DBusConnection.systemBusAddress) } catch {
                    throw RuntimeFailure("Bluetooth is not reachable (BlueZ over D-Bus): \(error)")
                }
                let p = WiFiSetOverBLE.Peripheral(bus: bus, adapter: adapter, mtu: mtu)
                do { try await p.start() } catch { throw RuntimeFailure("Bluetooth adapter \(adapter): \(error)") }
                link = p
                bleBus = bus
                whereText = "Bluetooth LE on \(adapter)"
                close = { await p.stop() }
            } else {
                let p = try GATTOverUDP.Peripheral(port: port, maxMTU: mtu)
                link = p
                whereText = "127.0.0.1:\(p.port)"
                close = { p.close() }
            }
            let emulator = WiFiSetEmulator(peripheral: link, environment: environment,
                                           store: FileCredentialStore(url: storeURL), configuration: config)
            let out = Printer(json: json)
            out.emit(["event": "started", "at": whereText, "service": WiFiSetGATT.serviceUUID,
                      "networks": environment.networks.count, "secured": config.security != .none],
                     "* WiFiSet device on \(whereText) (service \(WiFiSetGATT.serviceUUID)), \(environment.networks.count) networks around")
            if let p = config.security.popShown {
                out.emit(["event": "pop", "code": p], "* proof of possession: \(p)\(allowClear ? " (credentials in clear are taken too)" : " (required: credentials in clear are refused)")")
            }
            let status = await emulator.status
            out.emit(["event": "status", "state": "\(status.state)", "ssid": status.ssid], "* status: \(Self.describe(status))")
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await e in emulator.events {
                        switch e {
                        case let .status(s):
                            out.emit(["event": "status", "state": "\(s.state)", "ssid": s.ssid, "ip": s.ipString], "* status: \(Self.describe(s))")
                        case let .output(o):
                            switch o {
                            case .scan: out.emit(["event": "scan"], "* scanning")
                            case let .store(ssid, _): out.emit(["event": "store", "ssid": ssid], "* credentials received for \(ssid)")
                            default: break
                            }
                        }
                    }
                }
                group.addTask { await emulator.run() }
                if let duration {
                    try? await Task.sleep(for: .seconds(duration))
                } else {
                    await group.next()
                }
                await close()
                group.cancelAll()
            }
            bleBus?.close()
        }

        static func randomCode() -> String {
            let symbols = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789") + ["L"] // 32 symbols: 40 bits in 8
            return String((0..<8).map { _ in symbols[Int.random(in: 0..<symbols.count)] })
        }

        static func describe(_ s: WiFiSet.Status) -> String {
            switch s.state {
            case .notConfigured: "not configured"
            case .configuredNotConnected: "configured for \(s.ssid), not connected"
            case .connecting: "connecting to \(s.ssid)…"
            case .connected: "connected to \(s.ssid): \(s.ipString) (\(s.rssi) dBm)"
            case .connectionFailed: "connection to \(s.ssid) failed"
            }
        }
    }

    struct ClientOptions: ParsableArguments {
        @Option(help: "The device's HOST:PORT.") var device = "127.0.0.1:\(WiFi.defaultPort)"
        @Flag(help: "Find the device over Bluetooth LE (BlueZ) instead of the loopback link.") var ble = false
        @Option(help: "The Bluetooth adapter for --ble.") var adapter = "hci0"
        @Option(help: "ATT MTU to ask for (23–517).") var mtu = 512
        @Flag(help: "Never cut a message into several writes (a device that cannot take chunks).") var noChunking = false
        @Option(help: "The device's proof-of-possession code: use secured mode.") var pop: String?
        @Flag(help: "Refuse to send credentials in clear (needs --pop).") var requireSecure = false
        @Flag(help: "One JSON object per line.") var json = false

        func validate() throws {
            guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be 23 to 517") }
            if requireSecure && pop == nil { throw ValidationError("--require-secure needs --pop CODE") }
            if !ble, UDPAddress(device) == nil { throw ValidationError("--device \(device): expected HOST:PORT with an IPv4 host") }
        }

        func connect() async throws -> WiFiSetClient {
            let central: any WiFiSetCentral
            if ble {
                let bus: DBusConnection
                do { bus = try DBusConnection(address: DBusConnection.systemBusAddress) } catch {
                    throw RuntimeFailure("Bluetooth is not reachable (BlueZ over D-Bus): \(error)")
                }
                do { central = try await WiFiSetOverBLE.Central.connect(bus: bus, adapter: adapter) } catch {
                    throw RuntimeFailure("\(error)")
                }
            } else {
                guard let address = UDPAddress(device) else { throw ValidationError("--device \(device): expected HOST:PORT with an IPv4 host") }
                central = try await GATTOverUDP.Central.connect(to: address, mtu: mtu)
            }
            var o = WiFiSetClient.Options()
            o.chunking = !noChunking
            if let pop { o.security = requireSecure ? .required(pop: pop) : .preferred(pop: pop) }
            return WiFiSetClient(central: central, options: o)
        }
    }

    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the networks a device sees, with signal bars.")
        @OptionGroup var client: ClientOptions

        func run() async throws {
            let c = try await client.connect()
            let out = Printer(json: client.json)
            do {
                let networks = try await c.networks()
                if networks.isEmpty { out.emit(["event": "networks", "count": 0], "* no networks") }
                for n in networks {
                    out.emit(["event": "network", "ssid": n.ssid, "rssi": Int(n.rssi), "security": n.security.name, "channel": Int(n.channel)],
                             "  \(Self.bars(n.rssi))  \(DisplayText.clean(n.ssid.isEmpty ? "(hidden)" : n.ssid).padding(toLength: 24, withPad: " ", startingAt: 0)) \(n.security.name.padding(toLength: 16, withPad: " ", startingAt: 0)) ch \(String(n.channel).padding(toLength: 4, withPad: " ", startingAt: 0)) \(n.rssi) dBm")
                }
            } catch {
                await c.close()
                throw RuntimeFailure("\(error)")
            }
            await c.close()
        }

        /// Four bars at −55 dBm and better, one below −75.
        static func bars(_ rssi: Int8) -> String {
            let n = rssi >= -55 ? 4 : rssi >= -65 ? 3 : rssi >= -75 ? 2 : 1
            return String("▂▄▆█".prefix(n)) + String(repeating: " ", count: 4 - n)
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask a device how its Wi-Fi is (a Status Request).")
        @OptionGroup var client: ClientOptions

        func run() async throws {
            let c = try await client.connect()
            let out = Printer(json: client.json)
            do {
                let s = try await c.status()
                out.emit(["event": "status", "state": "\(s.state)", "ssid": s.ssid, "ip": s.ipString, "rssi": Int(s.rssi)],
                         "* \(Device.describe(s))")
            } catch {
                await c.close()
                throw RuntimeFailure("\(error)")
            }
            await c.close()
        }
    }

    struct Provision: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a device Wi-Fi credentials and follow its connection.")
        @OptionGroup var client: ClientOptions
        @Option(help: "The network's name.") var ssid: String
        @Option(help: "The password (default: asked at a prompt; STARLING_WIFI_PASSWORD also works).") var password: String?
        @Flag(help: "An open network: no password.") var open = false
        @Flag(help: "Send the password in clear, without the device's --pop code (anyone in radio range can read it).") var insecure = false
        @Option(help: "Seconds to wait for the outcome.") var timeout = 40.0

        func validate() throws {
            // A password travels sealed (--pop) or, when the person says so in words, in clear.
            if !open, client.pop == nil, !insecure {
                throw ValidationError("the password would travel in clear: give the device's proof-of-possession code with --pop CODE (its `wifi device --secure` shows it), or say --insecure to send it in clear anyway (anyone in radio range can read it)")
            }
            if insecure, client.pop != nil { throw ValidationError("--insecure and --pop: choose one (--pop seals the password)") }
        }

        func run() async throws {
            let pw: String
            if open { pw = "" } else if let password { pw = password } else if let env = ProcessInfo.processInfo.environment["STARLING_WIFI_PASSWORD"] {
                pw = env
            } else {
                guard isatty(STDIN_FILENO) == 1, let typed = getpass("Password for \(ssid): ").map({ String(cString: $0) }) else {
                    throw RuntimeFailure("a password is needed: --password, --open, STARLING_WIFI_PASSWORD, or a terminal")
                }
                pw = typed
            }
            let c = try await client.connect()
            let out = Printer(json: client.json)
            let updates = Task {
                for await s in c.statusUpdates {
                    out.emit(["event": "status", "state": "\(s.state)", "ssid": s.ssid, "ip": s.ipString, "rssi": Int(s.rssi)],
                             "* \(Device.describe(s))")
                }
            }
            defer { updates.cancel() }
            do {
                try await c.provision(ssid: ssid, password: pw)
                out.emit(["event": "accepted", "secured": await c.isSecured],
                         "* credentials accepted\(await c.isSecured ? " (sealed in secured mode)" : " (sent in clear)")")
                let outcome = try await c.outcome(within: .seconds(timeout))
                try? await Task.sleep(for: .milliseconds(50)) // let the status line print first
                let reason = await c.failureReason
                await c.close()
                if outcome.state != .connected {
                    out.emit(["event": "failed", "reason": reason ?? "connection to \(ssid) failed"],
                             "! \(reason ?? "connection to \(ssid) failed")")
                    throw ExitCode(1)
                }
            } catch let e as ExitCode {
                throw e
            } catch {
                await c.close()
                out.emit(["event": "failed", "reason": "\(error)"], "! \(error)")
                throw ExitCode(1)
            }
        }
    }
}

extension WiFiSetDevice.Security {
    var popShown: String? {
        switch self {
        case .none: nil
        case let .optional(p), let .required(p): p
        }
    }
}

/// Prints text, or one JSON object per line.
struct Printer: Sendable {
    var json: Bool
    func emit(_ object: [String: Any], _ text: String) {
        let line: String
        if json {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            line = String(decoding: data, as: UTF8.self)
        } else {
            line = text
        }
        StandardOutput.write(Data((line + "\n").utf8))
    }
}
