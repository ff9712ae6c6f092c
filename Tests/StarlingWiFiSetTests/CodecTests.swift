import Foundation
import Testing
import StarlingWire
@testable import StarlingWiFiSet

func frame(_ hex: String) throws -> [UInt8] { try [UInt8](hex: hex) }

@Suite struct WiFiSetCodecTests {
    let samples: [WiFiSet.Message] = [
        .listStart,
        .networkEntry(.init(ssid: "MyNetwork2.4", rssi: -56, security: .wpaPSK, channel: 6)),
        .networkEntry(.init(ssid: "", rssi: 127, security: .open, channel: 1)),            // hidden network
        .listEnd(count: 3),
        .credentialWrite(ssid: "MyNetwork2.4", password: "mypassword123"),
        .credentialWrite(ssid: "Café ☕", password: ""),
        .credentialAck(.success), .credentialAck(.storageFailure),
        .statusRequest,
        .statusResponse(.init(state: .connected, rssi: -56, ip: [192, 168, 1, 100], ssid: "MyNetwork2.4")),
        .statusResponse(.init(state: .notConfigured)),
        .error(.unknownMessageType, message: "unknown message type 0x42"),
        .secureHello(publicKey: [UInt8](repeating: 9, count: 32)),
        .secureHelloReply(publicKey: [UInt8](repeating: 8, count: 32), nonce: [UInt8](repeating: 7, count: 16)),
        .secureVerify([1, 2, 3]), .sealed([4, 5, 6]),
    ]

    @Test func everyMessageRoundTrips() throws {
        for (i, m) in samples.enumerated() {
            let f = WiFiSet.Frame(sequence: UInt8(i * 37 % 256), m)
            let bytes = try f.encoded()
            #expect(WiFiSet.messageLength(bytes) == bytes.count)
            #expect(try WiFiSet.Frame(decoding: bytes) == f, "\(m)")
        }
    }

    @Test func headerIsLittleEndianAndIntegersAsSpecified() throws {
        let status = try WiFiSet.Frame(sequence: 10, .statusResponse(.init(state: .connected, rssi: -56, ip: [192, 168, 1, 100],
                                                                             ssid: "MyNetwork2.4"))).encoded()
        #expect(Array(status.prefix(4)) == [0x21, 0x0A, 0x13, 0x00])     // 19-byte payload, LE
        #expect(Array(status[4..<10]) == [0x03, 0xC8, 0xC0, 0xA8, 0x01, 0x64]) // RSSI signed, IP in network order
        let long = try WiFiSet.Frame(sequence: 0, .error(.storageError, message: String(repeating: "x", count: 300))).encoded()
        #expect(long[2] == 0x01 && long[3] == 0x01)                       // 257 = 0x0101
    }

    /// Seed 003's three example dumps are wrong (docs/PROTOCOL.md says how):
    /// a correct decoder rejects them, and their corrected forms decode.
    @Test func theSeedsExamplesAreRejectedAndTheirCorrectionsDecode() throws {
        let example1 = try frame("02 05 28 00 0C 4D 79 4E 65 74 77 6F 72 6B 32 2E 34 C8 02 06")
        let example2 = try frame("10 01 20 00 0C 4D 79 4E 65 74 77 6F 72 6B 32 2E 34 0C 6D 79 70 61 73 73 77 6F 72 64 31 32 33")
        let example3 = try frame("21 0A 16 00 03 C8 C0 A8 01 64 0C 4D 79 4E 65 74 77 6F 72 6B 32 2E 34")
        for (bytes, declared, present) in [(example1, 40, 16), (example2, 32, 27), (example3, 22, 19)] {
            do {
                _ = try WiFiSet.Frame(decoding: bytes)
                Issue.record("accepted a wrong example")
            } catch {
                #expect(error.description.contains("payload length \(declared) declared, \(present) bytes follow"), "\(error)")
            }
        }
        let fixed1 = try frame("02 05 10 00 0C 4D 79 4E 65 74 77 6F 72 6B 32 2E 34 C8 02 06")
        #expect(try WiFiSet.Frame(decoding: fixed1).message == .networkEntry(.init(ssid: "MyNetwork2.4", rssi: -56, security: .wpaPSK, channel: 6)))
        let fixed2 = try frame("10 01 1B 00 0C 4D 79 4E 65 74 77 6F 72 6B 32 2E 34 0D 6D 79 70 61 73 73 77 6F 72 64 31 32 33")
        #expect(try WiFiSet.Frame(decoding: fixed2).message == .credentialWrite(ssid: "MyNetwork2.4", password: "mypassword123"))
        let fixed3 = try frame("21 0A 13 00 03 C8 C0 A8 01 64 0C 4D 79 4E 65 74 77 6F 72 6B 32 2E 34")
        #expect(try WiFiSet.Frame(decoding: fixed3).message == .statusResponse(.init(state: .connected, rssi: -56, ip: [192, 168, 1, 100], ssid: "MyNetwork2.4")))
        // The corrected dumps are what the encoder makes.
        #expect(try WiFiSet.Frame(sequence: 1, .credentialWrite(ssid: "MyNetwork2.4", password: "mypassword123")).encoded() == fixed2)
    }

    @Test func validationRules() throws {
        func decode(_ hex: String) -> WiFiSet.DecodeError? {
            do { _ = try WiFiSet.Frame(decoding: try frame(hex)); return nil } catch { return error as? WiFiSet.DecodeError }
        }
        let ssid33 = "10 00 23 00 21 " + String(repeating: "41 ", count: 33) + "00"
        #expect(decode(ssid33) == .invalidSSIDLength(33))
        #expect(decode("10 00 02 00 00 00") == .invalidSSIDLength(0))           // credential SSIDs have 1–32
        let pw64 = "10 00 43 00 01 41 40 " + String(repeating: "42 ", count: 64)
        #expect(decode(pw64) == .invalidPasswordLength(64))
        #expect(decode("42 00 00 00") == .unknownType(0x42))
        #expect({ if case .malformed = decode("02 00 05 00 01 FF C8 02 06") { true } else { false } }()) // SSID not UTF-8
        #expect({ if case .malformed = decode("02 00 04 00 00 C8 09 06") { true } else { false } }())   // security 0x09
        #expect({ if case .malformed = decode("02 00 04 00 00 C8 02 00") { true } else { false } }())   // channel 0
        #expect({ if case .malformed = decode("21 00 07 00 07 00 00 00 00 00 00") { true } else { false } }()) // state 7
        #expect({ if case .malformed = decode("01 00") { true } else { false } }())                     // truncated header
        #expect(throws: EncodingError.self) { try WiFiSet.Frame(sequence: 0, .credentialWrite(ssid: "", password: "x")).encoded() }
        #expect(throws: EncodingError.self) {
            try WiFiSet.Frame(sequence: 0, .credentialWrite(ssid: "x", password: String(repeating: "p", count: 64))).encoded()
        }
        #expect(throws: EncodingError.self) {
            try WiFiSet.Frame(sequence: 0, .networkEntry(.init(ssid: String(repeating: "s", count: 33), rssi: 0, security: .open, channel: 1))).encoded()
        }
    }

    @Test func sequenceNumbersTellLossDuplicatesAndReorderingAcrossTheWrap() {
        var s = WiFiSetSequence()
        #expect(s.observe(250) == .first)
        #expect(s.observe(251) == .inOrder)
        #expect(s.observe(251) == .duplicate)
        #expect(s.observe(255) == .gap(missing: 3))
        #expect(s.observe(0) == .inOrder)             // wraps
        #expect(s.observe(254) == .reordered)         // older, from before the wrap
        #expect(s.observe(2) == .gap(missing: 1))
    }

    @Test func chunksReassembleInAnyCutAndStaleHalvesAreDropped() throws {
        let a = try WiFiSet.Frame(sequence: 1, .credentialWrite(ssid: "MyNetwork2.4", password: "mypassword123")).encoded()
        let b = try WiFiSet.Frame(sequence: 2, .statusRequest).encoded()
        for mtu in [23, 24, 30, 512] {
            var assembler = WiFiSetAssembler()
            var got: [[UInt8]] = []
            for chunk in WiFiSetGATT.chunks(a, mtu: mtu) + WiFiSetGATT.chunks(b, mtu: mtu) {
                #expect(chunk.count <= mtu - 3)
                got += assembler.add(chunk, now: 0)
            }
            #expect(got == [a, b], "mtu \(mtu)")
        }
        var assembler = WiFiSetAssembler()
        #expect(assembler.add(Array(a.prefix(10)), now: 0).isEmpty)
        #expect(assembler.add(b, now: 5_000) == [b])   // the half from 5 s ago was a lost chunk's: dropped
        #expect(assembler.dropped == 1)
    }
}

/// The networks file of the device emulator: both forms, and errors in words.
@Suite struct NetworksFileTests {
    func decode(_ json: String) throws -> WiFiEnvironment { try WiFiEnvironment.decode(Data(json.utf8)) }

    func error(_ json: String) -> String {
        do { _ = try decode(json); return "" } catch { return "\(error)" }
    }

    @Test func objectAndPlainArray() throws {
        let array = try decode(#"[{"ssid": "Home", "rssi": -48, "security": "wpa2", "channel": 6, "password": "pw"}]"#)
        let object = try decode(#"{"networks": [{"ssid": "Home", "rssi": -48, "security": "wpa2", "channel": 6, "password": "pw"}]}"#)
        #expect(array.networks == object.networks)
        #expect(array.networks.first?.securityType == .wpaPSK)
    }

    @Test func errorsSayWhichFieldAndWhy() {
        #expect(error(#"[{"ssid": "A", "rssi": -4, "security": "wpa2", "channel": 6}, {"ssid": "B", "security": "open", "channel": 1}]"#)
            == "[1].rssi: missing")
        #expect(error(#"{"networks": [{"ssid": "A", "rssi": "loud", "security": "open", "channel": 1}]}"#) == "networks[0].rssi: expected a number")
        #expect(error(#"[{"ssid": "A", "rssi": -4, "security": "wpa9", "channel": 6}]"#).hasPrefix(#"[0].security: unknown security "wpa9""#))
        let notJSON = error("[{\"ssid\": \"A\",\n  oops}]")
        #expect(notJSON.hasPrefix("not JSON:") && notJSON.contains("line"), "\(notJSON)")
    }
}
