import Crypto
import CryptoExtras
import Foundation
import StarlingTestSupport
import Testing
@testable import StarlingCrypto
import StarlingWire

/// BLAKE3 and XChaCha20-Poly1305, which Starling writes itself: the published
/// vectors, and a cross-check against independent implementations (the
/// official `blake3` package and libsodium through `pynacl`).
@Suite struct PrimitivesTests {
    struct BLAKE3File: Decodable {
        struct Case: Decodable { let input_len: Int; let hash: String; let keyed_hash: String; let derive_key: String }
        let key: String
        let context_string: String
        let cases: [Case]
    }

    /// The input of the official vectors: bytes 0, 1, …, 250, 0, 1, … .
    static func vectorInput(_ count: Int) -> [UInt8] { (0..<count).map { UInt8($0 % 251) } }

    @Test func blake3OfficialVectors() throws {
        let file = try JSONDecoder().decode(BLAKE3File.self, from: Data(contentsOf: vectorURL("blake3_test_vectors.json")))
        let key = Array(file.key.utf8)
        #expect(file.cases.count >= 30)
        for c in file.cases {
            let input = Self.vectorInput(c.input_len)
            let extended = h(c.hash).count
            #expect(BLAKE3.hash(input, byteCount: extended) == h(c.hash), "hash, \(c.input_len) bytes")
            #expect(BLAKE3.hash(input) == Array(h(c.hash).prefix(32)), "hash, \(c.input_len) bytes")
            #expect(try BLAKE3.keyedHash(key: key, input, byteCount: extended) == h(c.keyed_hash), "keyed, \(c.input_len) bytes")
            #expect(BLAKE3.deriveKey(context: file.context_string, material: input, byteCount: extended) == h(c.derive_key),
                    "derive_key, \(c.input_len) bytes")
        }
    }

    /// Input fed in pieces of every awkward size gives the one-shot answer.
    @Test func blake3IncrementalEqualsOneShot() {
        let input = Self.vectorInput(5_000)
        let expected = BLAKE3.hash(input)
        for piece in [1, 7, 63, 64, 65, 1023, 1024, 1025, 4096] {
            var hasher = BLAKE3()
            var offset = 0
            while offset < input.count {
                let end = min(offset + piece, input.count)
                hasher.update(input[offset..<end])
                offset = end
            }
            #expect(hasher.finalize() == expected, "pieces of \(piece)")
        }
        #expect(throws: BLAKE3.Error.keyLength(31)) { try BLAKE3(key: [UInt8](repeating: 0, count: 31)) }
    }

    struct XChaChaFile: Decodable {
        struct Group: Decodable {
            struct Test: Decodable { let tcId: Int; let key: String; let iv: String; let aad: String; let msg: String; let ct: String; let tag: String; let result: String }
            let ivSize: Int
            let tests: [Test]
        }
        let numberOfTests: Int
        let testGroups: [Group]
    }

    /// Wycheproof: valid cases seal to the expected bytes and open; invalid
    /// ones (altered tags and ciphertexts) are refused; nonces that are not
    /// 24 bytes are refused before any work.
    @Test func xchachaWycheproof() throws {
        let file = try JSONDecoder().decode(XChaChaFile.self, from: Data(contentsOf: vectorURL("wycheproof_xchacha20_poly1305_test.json")))
        var checked = 0, valid = 0
        for group in file.testGroups {
            for t in group.tests {
                checked += 1
                let key = h(t.key), nonce = h(t.iv), aad = h(t.aad), msg = h(t.msg)
                let sealed = h(t.ct) + h(t.tag)
                guard group.ivSize == 192 else {
                    #expect(throws: XChaCha20Poly1305.Error.nonceLength(nonce.count), "tc \(t.tcId)") {
                        try XChaCha20Poly1305.open(sealed, key: key, nonce: nonce, authenticating: aad)
                    }
                    continue
                }
                if t.result == "valid" {
                    valid += 1
                    #expect(try XChaCha20Poly1305.seal(msg, key: key, nonce: nonce, authenticating: aad) == sealed, "tc \(t.tcId)")
                    #expect(try XChaCha20Poly1305.open(sealed, key: key, nonce: nonce, authenticating: aad) == msg, "tc \(t.tcId)")
                } else {
                    #expect(throws: XChaCha20Poly1305.Error.authenticationFailure, "tc \(t.tcId)") {
                        try XChaCha20Poly1305.open(sealed, key: key, nonce: nonce, authenticating: aad)
                    }
                }
            }
        }
        #expect(checked == file.numberOfTests)
        #expect(valid > 100)
    }

    /// draft-irtf-cfrg-xchacha-03 §2.2.1: the HChaCha20 test vector.
    @Test func hChaCha20DraftVector() {
        let key = h("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
        let nonce = h("000000090000004a0000000031415927")
        #expect(XChaCha20Poly1305.hChaCha20(key: key, nonce: nonce)
            == h("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"))
        #expect(throws: XChaCha20Poly1305.Error.tooShort(15)) {
            try XChaCha20Poly1305.open([UInt8](repeating: 0, count: 15), key: key, nonce: [UInt8](repeating: 0, count: 24))
        }
    }

    struct PBKDF2File: Decodable {
        struct Group: Decodable {
            struct Test: Decodable { let tcId: Int; let password: String; let salt: String; let iterationCount: Int; let dkLen: Int; let dk: String }
            let tests: [Test]
        }
        let numberOfTests: Int
        let testGroups: [Group]
    }

    /// Wycheproof's PBKDF2-HMAC-SHA256 vectors through the call the store's
    /// keyring makes (swift-crypto's PBKDF2 with the rounds unchecked, so
    /// that tests may use few).
    @Test func pbkdf2AsTheKeyringCallsIt() throws {
        let file = try JSONDecoder().decode(PBKDF2File.self, from: Data(contentsOf: vectorURL("wycheproof_pbkdf2_hmacsha256_test.json")))
        var checked = 0
        for t in file.testGroups.flatMap(\.tests) {
            let key = try KDF.Insecure.PBKDF2.deriveKey(from: h(t.password), salt: h(t.salt), using: .sha256,
                                                         outputByteCount: t.dkLen, unsafeUncheckedRounds: t.iterationCount)
            #expect(key.withUnsafeBytes { Array($0) } == h(t.dk), "tc \(t.tcId)")
            checked += 1
        }
        #expect(checked == file.numberOfTests)
    }

    /// Random inputs of many lengths, compared with the Python packages.
    @Test func crossCheckWithPython() throws {
        var rng = SystemRandomNumberGenerator()
        func random(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        struct Request: Encodable { let op: String; var data = ""; var len: Int?; var key: String?; var context: String?; var nonce: String?; var aad: String? }
        var requests = [Request]()
        var expected = [[UInt8]]()
        for length in [0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 3073, 8192, 31_744, 65_537] {
            let data = random(length), key = random(32), nonce = random(24), aad = random(length % 40)
            let outLength = [32, 1, 64, 131][length % 4]
            requests.append(Request(op: "blake3", data: data.hexString, len: outLength))
            expected.append(BLAKE3.hash(data, byteCount: outLength))
            requests.append(Request(op: "blake3_keyed", data: data.hexString, len: 32, key: key.hexString))
            expected.append(try BLAKE3.keyedHash(key: key, data))
            requests.append(Request(op: "blake3_derive", data: data.hexString, len: 32, context: "starling 2026-11-24 test \(length)"))
            expected.append(BLAKE3.deriveKey(context: "starling 2026-11-24 test \(length)", material: data))
            requests.append(Request(op: "xchacha_seal", data: data.hexString, key: key.hexString, nonce: nonce.hexString, aad: aad.hexString))
            expected.append(try XChaCha20Poly1305.seal(data, key: key, nonce: nonce, authenticating: aad))
        }
        let encoder = JSONEncoder()
        let input = try requests.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n") + "\n"
        let lines = try runPythonReference("primitives_reference.py", input: input)
        #expect(lines.count == expected.count)
        struct Answer: Decodable { let out: String }
        for (i, line) in lines.enumerated() where i < expected.count {
            let answer = try JSONDecoder().decode(Answer.self, from: Data(line.utf8))
            #expect(h(answer.out) == expected[i], "request \(i): \(requests[i].op), \(requests[i].data.count / 2) bytes")
        }
    }
}

/// Runs a script of Tests/interop with the repository's Python environment,
/// its standard input from `input`, and returns its output lines.
func runPythonReference(_ script: String, input: String) throws -> [String] {
    let root = PythonEnvironment.root
    let python = try PythonEnvironment.require()
    let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("starling-ref-\(UUID().uuidString).jsonl")
    try Data(input.utf8).write(to: inputFile)
    defer { try? FileManager.default.removeItem(at: inputFile) }
    let process = Process()
    process.executableURL = python
    process.arguments = [root.appendingPathComponent("Tests/interop/\(script)").path]
    process.standardInput = try FileHandle(forReadingFrom: inputFile)
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(script) exited \(process.terminationStatus)")
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}
