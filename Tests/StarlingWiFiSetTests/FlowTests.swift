import Foundation
import Testing
import StarlingCrypto
import StarlingWire
@testable import StarlingWiFiSet

let environment = WiFiEnvironment(networks: [
    .init(ssid: "Home", rssi: -48, security: "wpa2", channel: 6, password: "correct horse"),
    .init(ssid: "Café ☕", rssi: -71, security: "open", channel: 11),
    .init(ssid: "Office", rssi: -60, security: "wpa3", channel: 36, password: "s3cret"),
], scanDelay: 20, connectDelay: 50)

/// A store in memory, or one that fails.
final class MemoryStore: CredentialStore, @unchecked Sendable {
    let fails: Bool
    private let lock = NSLock()
    private var saved: (String, String)?
    init(fails: Bool = false) { self.fails = fails }
    func load() -> (ssid: String, password: String)? { lock.lock(); defer { lock.unlock() }; return saved.map { ($0.0, $0.1) } }
    func save(ssid: String, password: String) throws {
        if fails { throw CocoaError(.fileWriteNoPermission) }
        lock.lock(); saved = (ssid, password); lock.unlock()
    }
}

/// A device emulator and a client on one in-process link.
struct Bench {
    let link: InProcessGATT
    let emulator: WiFiSetEmulator
    let client: WiFiSetClient
    let store: MemoryStore
    let running: Task<Void, Never>

    init(mtu: Int = 512, faults: InProcessGATT.Faults = .init(), device: WiFiSetDevice.Configuration = .init(),
         client options: WiFiSetClient.Options = .init(), store: MemoryStore = MemoryStore(),
         environment: WiFiEnvironment = environment) {
        link = InProcessGATT(mtu: mtu, faults: faults)
        var config = device
        config.mtu = mtu
        emulator = WiFiSetEmulator(peripheral: link.peripheral, environment: environment, store: store, configuration: config)
        var o = options
        o.ackTimeout = .milliseconds(400)
        o.listTimeout = .seconds(2)
        client = WiFiSetClient(central: link.central, options: o)
        self.store = store
        let e = emulator
        running = Task { await e.run() }
    }

    func finish() async {
        link.disconnect()
        await running.value
    }
}

@Suite struct WiFiSetDeviceTests {
    func written(_ d: inout WiFiSetDevice, _ hex: String) throws -> [WiFiSet.Message] {
        let outputs = d.handle(.written(.credentialWrite, try [UInt8](hex: hex)), now: 0)
        return outputs.compactMap { if case let .notify(_, v) = $0 { try? WiFiSet.Frame(decoding: v).message } else { nil } }
    }

    @Test func badInputGetsTheSeedsCodes() throws {
        var d = WiFiSetDevice(configuration: .init())
        #expect(try written(&d, "10 00 23 00 21 " + String(repeating: "41 ", count: 33) + "00") == [.credentialAck(.invalidSSIDLength)])
        #expect(try written(&d, "10 00 43 00 01 41 40 " + String(repeating: "42 ", count: 64)) == [.credentialAck(.invalidPasswordLength)])
        let unknown = try written(&d, "42 07 00 00")
        #expect(unknown.count == 1)
        if case let .error(code, _)? = unknown.first { #expect(code == .unknownMessageType) } else { Issue.record("\(unknown)") }
        let garbage = try written(&d, "02 00 09 00 01")                    // a header promising 9 bytes … and one more chunk later
        #expect(garbage.isEmpty)                                           // waits for the rest
        let truncated = try written(&d, "FF FF FF FF FF FF FF FF")        // completes it: not a message for the device
        if case let .error(code, _)? = truncated.first { #expect(code == .invalidMessageFormat) } else { Issue.record("\(truncated)") }
        #expect(d.status.state == .notConfigured)
    }

    @Test func aSecuredDeviceRefusesClearCredentialsAndAV1DeviceDoesNotKnowSecuredMode() throws {
        var config = WiFiSetDevice.Configuration()
        config.security = .required(pop: "abcd1234")
        var secured = WiFiSetDevice(configuration: config)
        let clear = try WiFiSet.Frame(sequence: 1, .credentialWrite(ssid: "Home", password: "pw")).encoded()
        #expect(try written(&secured, clear.hexString) == [.credentialAck(.securedSessionRequired)])
        var v1 = WiFiSetDevice(configuration: .init())
        let hello = try WiFiSet.Frame(sequence: 1, .secureHello(publicKey: [UInt8](repeating: 9, count: 32))).encoded()
        let reply = try written(&v1, hello.hexString)
        if case let .error(code, _)? = reply.first { #expect(code == .unknownMessageType) } else { Issue.record("\(reply)") }
    }

    @Test func aDeviceThatCannotChunkSaysSoInsteadOfSendingHalfAMessage() throws {
        var config = WiFiSetDevice.Configuration()
        config.mtu = 23
        config.chunking = false
        var d = WiFiSetDevice(configuration: config)
        let out = d.handle(.scanned([.init(ssid: "A very long network", rssi: -50, security: .wpa3, channel: 1)]), now: 0)
        let messages = out.compactMap { if case let .notify(c, v) = $0 { (c, try? WiFiSet.Frame(decoding: v).message) } else { nil } }
        #expect(out.allSatisfy { if case let .notify(_, v) = $0 { v.count <= 20 } else { true } })
        #expect(messages.contains { $0.0 == .status && { if case .error(.invalidMessageFormat, _)? = $0.1 { true } else { false } }($0) })
        #expect(messages.contains { if case .listEnd? = $0.1 { true } else { false } })
    }

    @Test func connectionTimesOutAfterItsDeadline() throws {
        var config = WiFiSetDevice.Configuration()
        config.connectTimeout = 30_000
        var d = WiFiSetDevice(configuration: config)
        _ = d.handle(.written(.credentialWrite, try WiFiSet.Frame(sequence: 1, .credentialWrite(ssid: "Nowhere", password: "x")).encoded()), now: 0)
        let out = d.handle(.stored(failure: nil), now: 1_000)
        #expect(out.contains(.connect(ssid: "Nowhere", password: "x")))
        #expect(d.status.state == .connecting)
        #expect(d.nextDeadline == 31_000)
        #expect(d.tick(now: 30_999).isEmpty)
        let late = d.tick(now: 31_000)
        #expect(late.contains(.cancelConnect))
        #expect(d.status.state == .connectionFailed)
    }
}

@Suite struct WiFiSetFlowTests {
    @Test func theWholeFlowSucceeds() async throws {
        let b = Bench()
        let networks = try await b.client.networks()
        #expect(networks.map(\.ssid) == ["Home", "Office", "Café ☕"])     // strongest first
        #expect(networks[0].security == .wpaPSK && networks[0].channel == 6 && networks[0].rssi == -48)
        try await b.client.provision(ssid: "Home", password: "correct horse")
        let outcome = try await b.client.outcome(within: .seconds(5))
        #expect(outcome.state == .connected)
        #expect(outcome.ssid == "Home" && outcome.ipString == "192.168.1.100" && outcome.rssi == -48)
        #expect(try await b.client.status().state == .connected)
        #expect(b.store.load()?.ssid == "Home")
        #expect(await b.client.sequenceAnomalies == 0)
        await b.finish()
    }

    @Test(arguments: [23, 128, 512])
    func theFlowWorksAtEachMTU(mtu: Int) async throws {
        var device = WiFiSetDevice.Configuration()
        device.security = .optional(pop: "K7QF2M9X")
        var options = WiFiSetClient.Options()
        options.security = .preferred(pop: "K7QF2M9X")
        let b = Bench(mtu: mtu, device: device, client: options)
        #expect(try await b.client.networks().count == 3)
        try await b.client.provision(ssid: "Office", password: "s3cret")
        #expect(try await b.client.outcome(within: .seconds(5)).state == .connected)
        #expect(b.link.tapped.allSatisfy { $0.value.count <= mtu - 3 })
        #expect(await b.client.isSecured)
        await b.finish()
    }

    @Test func aWrongPasswordEndsInConnectionFailed() async throws {
        let b = Bench()
        try await b.client.provision(ssid: "Home", password: "wrong")
        #expect(try await b.client.outcome(within: .seconds(5)).state == .connectionFailed)
        await b.finish()
    }

    @Test func aNetworkThatIsNotThereTimesOut() async throws {
        var device = WiFiSetDevice.Configuration()
        device.connectTimeout = 300
        var silent = environment
        silent.silentWhenAbsent = true
        let b = Bench(device: device, environment: silent)
        try await b.client.provision(ssid: "Elsewhere", password: "whatever")
        #expect(try await b.client.outcome(within: .seconds(5)).state == .connectionFailed)
        #expect(await b.client.failureReason == "no connection to Elsewhere within 0 s")
        await b.finish()
    }

    /// New credentials that fail (a refused password, a network not in range)
    /// do not cost the ones that worked: the phone is told why, and the
    /// device stores and joins the working network again.
    @Test func aFailedProvisioningKeepsTheCredentialsThatWorked() async throws {
        let b = Bench()
        try await b.client.provision(ssid: "Home", password: "correct horse")
        #expect(try await b.client.outcome(within: .seconds(5)).state == .connected)
        for (ssid, password, why) in [("Office", "guess", "the password was refused"), ("Elsewhere", "x", "no network named Elsewhere is in range")] {
            try await b.client.provision(ssid: ssid, password: password)
            let outcome = try await b.client.outcome(within: .seconds(5))
            #expect(outcome.state == .connectionFailed && outcome.ssid == ssid)
            #expect(await b.client.failureReason == "could not join \(ssid): \(why); keeping Home, which worked")
            #expect(b.store.load()?.ssid == "Home" && b.store.load()?.password == "correct horse")
            let back = try await b.client.outcome(within: .seconds(5))
            #expect(back.state == .connected && back.ssid == "Home")
        }
        // With nothing that worked before, a failure says why and keeps nothing to go back to.
        let fresh = Bench()
        try await fresh.client.provision(ssid: "Office", password: "guess")
        #expect(try await fresh.client.outcome(within: .seconds(5)).state == .connectionFailed)
        #expect(await fresh.client.failureReason == "could not join Office: the password was refused")
        await b.finish()
        await fresh.finish()
    }

    @Test func aStorageFailureIsReported() async throws {
        let b = Bench(store: MemoryStore(fails: true))
        await #expect(throws: WiFiSetClient.Failure.rejected(.storageFailure)) {
            try await b.client.provision(ssid: "Home", password: "correct horse")
        }
        await b.finish()
    }

    @Test func aLostACKIsRetriedAndTheRetrySucceeds() async throws {
        var faults = InProcessGATT.Faults()
        faults.dropNotifications = [0]                     // the first notification: the ACK
        let b = Bench(faults: faults)
        try await b.client.provision(ssid: "Home", password: "correct horse")
        #expect(try await b.client.outcome(within: .seconds(5)).state == .connected)
        let writes = b.link.tapped.filter(\.toDevice).count
        #expect(writes == 2)                                // the credentials went twice
        await b.finish()
    }

    @Test func mtu23WorksWithChunkingAndFailsClearlyWithout() async throws {
        let chunked = Bench(mtu: 23)
        #expect(try await chunked.client.networks().count == 3)
        try await chunked.client.provision(ssid: "Home", password: "correct horse")
        #expect(try await chunked.client.outcome(within: .seconds(5)).state == .connected)
        #expect(chunked.link.tapped.allSatisfy { $0.value.count <= 20 })
        await chunked.finish()

        var options = WiFiSetClient.Options()
        options.chunking = false
        var device = WiFiSetDevice.Configuration()
        device.chunking = false
        let whole = Bench(mtu: 23, device: device, client: options)
        await #expect(throws: WiFiSetClient.Failure.messageTooLarge(bytes: 23, limit: 20)) {
            try await whole.client.provision(ssid: "Home", password: "correct horse")
        }
        // Short list messages fit in 20 bytes: the list still comes.
        #expect(try await whole.client.networks().count == 3)
        await whole.finish()
    }

    @Test func lossyLinkStillGetsThereWithRetries() async throws {
        var faults = InProcessGATT.Faults()
        faults.loss = 0.2
        faults.seed = 3
        var options = WiFiSetClient.Options()
        options.ackAttempts = 10
        // A list is 5 notifications: all arrive in a third of the scans at 20%
        // loss, so 10 scans all fail in about 2% of runs (the loss pattern
        // shifts with scheduling); 25 make that 1 in 20,000.
        options.listAttempts = 25
        let b = Bench(faults: faults, client: options)
        #expect(try await b.client.networks().count == 3)
        try await b.client.provision(ssid: "Café ☕", password: "")
        await b.finish()
    }
}

@Suite struct WiFiSetSecuredModeTests {
    func secured(_ device: WiFiSetDevice.Security, _ client: WiFiSetClient.Security) -> Bench {
        var d = WiFiSetDevice.Configuration()
        d.security = device
        var o = WiFiSetClient.Options()
        o.security = client
        return Bench(device: d, client: o)
    }

    @Test func securedProvisioningHidesThePasswordFromAnEavesdropper() async throws {
        let b = secured(.required(pop: "K7QF2M9X"), .required(pop: "K7QF2M9X"))
        try await b.client.provision(ssid: "Home", password: "correct horse")
        #expect(await b.client.isSecured)
        let outcome = try await b.client.outcome(within: .seconds(5))
        #expect(outcome.state == .connected && outcome.ipString == "192.168.1.100")
        let air = b.link.tapped.flatMap(\.value)
        let password = Array("correct horse".utf8), ssid = Array("Home".utf8)
        #expect(!contains(air, password))
        #expect(!contains(air, ssid))                          // the status is sealed too
        #expect(b.store.load()?.password == "correct horse")
        await b.finish()
    }

    @Test func aWrongProofOfPossessionFails() async throws {
        let b = secured(.required(pop: "K7QF2M9X"), .required(pop: "K7QF2M9Y"))
        do {
            try await b.client.provision(ssid: "Home", password: "correct horse")
            Issue.record("provisioned with a wrong code")
        } catch let f as WiFiSetClient.Failure {
            guard case .security = f else { Issue.record("\(f)"); return }
        }
        #expect(b.store.load() == nil)
        await b.finish()
    }

    @Test func aV1DeviceStillWorksUnlessSecuredModeIsRequired() async throws {
        let preferred = secured(.none, .preferred(pop: "K7QF2M9X"))
        try await preferred.client.provision(ssid: "Home", password: "correct horse")
        #expect(await !preferred.client.isSecured)
        await preferred.finish()
        let required = secured(.none, .required(pop: "K7QF2M9X"))
        await #expect(throws: WiFiSetClient.Failure.secureModeUnsupported) {
            try await required.client.provision(ssid: "Home", password: "correct horse")
        }
        #expect(required.store.load() == nil)
        await required.finish()
    }

    @Test func aSecuredDeviceRefusesClearCredentialsFromAV1Phone() async throws {
        let b = secured(.required(pop: "K7QF2M9X"), .none)
        await #expect(throws: WiFiSetClient.Failure.rejected(.securedSessionRequired)) {
            try await b.client.provision(ssid: "Home", password: "correct horse")
        }
        await b.finish()
    }

    @Test func sealedMessagesRejectReplaysAndTampering() throws {
        var phone = WiFiSetSecurity.Phone(pop: "1234")
        var device = WiFiSetSecurity.Device(pop: "1234")
        guard case let .secureHello(pk) = phone.hello,
              case let .secureHelloReply(dk, nonce) = try device.received(phoneKey: pk) else { Issue.record("handshake"); return }
        guard case let .secureVerify(proof) = try phone.received(deviceKey: dk, nonce: nonce) else { Issue.record("verify"); return }
        let (reply, deviceSide) = try device.verify(phoneProof: proof)
        guard case let .secureVerifyReply(deviceProof) = reply else { Issue.record("reply"); return }
        var phoneSide = try phone.finished(deviceProof: deviceProof)
        var receiver = deviceSide
        let box = try phoneSide.seal([1, 2, 3])
        #expect(try receiver.open(box) == [1, 2, 3])
        #expect(throws: WiFiSetSecurity.Error.replayed(counter: 1)) { try receiver.open(box) }
        var altered = try phoneSide.seal([4, 5, 6])
        altered[6] ^= 1
        #expect(throws: WiFiSetSecurity.Error.openFailed) { try receiver.open(altered) }
    }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
}
