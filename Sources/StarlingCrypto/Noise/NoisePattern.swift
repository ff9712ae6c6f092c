/// A token of a Noise message pattern (Noise specification §7).
public enum NoiseToken: String, Hashable, Sendable {
    case e, s, ee, es, se, ss, psk
}

/// A handshake pattern: pre-messages and message patterns, possibly with PSK
/// modifiers. Messages at even indices go initiator → responder.
public struct NoisePattern: Hashable, Sendable {
    public var name: String
    public var initiatorPreMessage: [NoiseToken]
    public var responderPreMessage: [NoiseToken]
    public var messages: [[NoiseToken]]

    /// One-way patterns (N, K, X and their PSK forms) have one message and a
    /// transport phase in which only the initiator sends.
    public var isOneWay: Bool { messages.count == 1 }
    public var usesPSK: Bool { messages.contains { $0.contains(.psk) } }
    public var pskCount: Int { messages.reduce(0) { $0 + $1.filter { $0 == .psk }.count } }

    public init(name: String, initiatorPreMessage: [NoiseToken] = [], responderPreMessage: [NoiseToken] = [],
                messages: [[NoiseToken]]) {
        self.name = name
        self.initiatorPreMessage = initiatorPreMessage
        self.responderPreMessage = responderPreMessage
        self.messages = messages
    }

    /// A pattern by name, e.g. `XX`, `IK1`, `XXpsk3`, `NNpsk0+psk2`.
    public init(named fullName: String) throws(NoiseError) {
        let baseEnd = fullName.firstIndex { $0.isLowercase } ?? fullName.endIndex
        let base = String(fullName[..<baseEnd])
        guard let spec = Self.table[base] else { throw .unsupportedProtocol(fullName) }
        func tokens(_ s: String) -> [NoiseToken] {
            s.split(separator: ",").map { NoiseToken(rawValue: String($0.filter { $0 != " " }))! }
        }
        var pattern = NoisePattern(name: fullName, initiatorPreMessage: tokens(spec.0),
                                   responderPreMessage: tokens(spec.1), messages: spec.2.map(tokens))
        let modifiers = fullName[baseEnd...]
        if !modifiers.isEmpty {
            for modifier in modifiers.split(separator: "+") {
                guard modifier.hasPrefix("psk"), let n = Int(modifier.dropFirst(3)), n <= pattern.messages.count else {
                    throw .unsupportedProtocol(fullName)
                }
                if n == 0 { pattern.messages[0].insert(.psk, at: 0) } else { pattern.messages[n - 1].append(.psk) }
            }
        }
        self = pattern
    }

    /// The fundamental (§7.4), one-way (§7.2) and deferred (§7.5) patterns:
    /// initiator pre-message, responder pre-message, messages.
    static let table: [String: (String, String, [String])] = [
        "N": ("", "s", ["e, es"]),
        "K": ("s", "s", ["e, es, ss"]),
        "X": ("", "s", ["e, es, s, ss"]),
        "NN": ("", "", ["e", "e, ee"]),
        "NK": ("", "s", ["e, es", "e, ee"]),
        "NX": ("", "", ["e", "e, ee, s, es"]),
        "KN": ("s", "", ["e", "e, ee, se"]),
        "KK": ("s", "s", ["e, es, ss", "e, ee, se"]),
        "KX": ("s", "", ["e", "e, ee, se, s, es"]),
        "XN": ("", "", ["e", "e, ee", "s, se"]),
        "XK": ("", "s", ["e, es", "e, ee", "s, se"]),
        "XX": ("", "", ["e", "e, ee, s, es", "s, se"]),
        "IN": ("", "", ["e, s", "e, ee, se"]),
        "IK": ("", "s", ["e, es, s, ss", "e, ee, se"]),
        "IX": ("", "", ["e, s", "e, ee, se, s, es"]),
        // Deferred patterns.
        "NK1": ("", "s", ["e", "e, ee, es"]),
        "NX1": ("", "", ["e", "e, ee, s", "es"]),
        "X1N": ("", "", ["e", "e, ee", "s", "se"]),
        "X1K": ("", "s", ["e, es", "e, ee", "s", "se"]),
        "XK1": ("", "s", ["e", "e, ee, es", "s, se"]),
        "X1K1": ("", "s", ["e", "e, ee, es", "s", "se"]),
        "X1X": ("", "", ["e", "e, ee, s, es", "s", "se"]),
        "XX1": ("", "", ["e", "e, ee, s", "es, s, se"]),
        "X1X1": ("", "", ["e", "e, ee, s", "es, s", "se"]),
        "K1N": ("s", "", ["e", "e, ee", "se"]),
        "K1K": ("s", "s", ["e, es", "e, ee", "se"]),
        "KK1": ("s", "s", ["e", "e, ee, se, es"]),
        "K1K1": ("s", "s", ["e", "e, ee, es", "se"]),
        "K1X": ("s", "", ["e", "e, ee, s, es", "se"]),
        "KX1": ("s", "", ["e", "e, ee, se, s", "es"]),
        "K1X1": ("s", "", ["e", "e, ee, s", "se, es"]),
        "I1N": ("", "", ["e, s", "e, ee", "se"]),
        "I1K": ("", "s", ["e, es, s", "e, ee", "se"]),
        "IK1": ("", "s", ["e, s", "e, ee, se, es"]),
        "I1K1": ("", "s", ["e, s", "e, ee, es", "se"]),
        "I1X": ("", "", ["e, s", "e, ee, s, es", "se"]),
        "IX1": ("", "", ["e, s", "e, ee, se, s", "es"]),
        "I1X1": ("", "", ["e, s", "e, ee, s", "se, es"]),
    ]
}

/// A full protocol name: `Noise_<pattern>_25519_ChaChaPoly_SHA256`.
public struct NoiseProtocol: Hashable, Sendable {
    public var name: String
    public var pattern: NoisePattern

    public init(_ name: String) throws(NoiseError) {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "Noise", parts[2] == "25519", parts[3] == "ChaChaPoly", parts[4] == "SHA256" else {
            throw .unsupportedProtocol(name)
        }
        self.name = name
        self.pattern = try NoisePattern(named: String(parts[1]))
    }

    /// The protocol bitchat uses.
    public static let bitchat = try! NoiseProtocol("Noise_XX_25519_ChaChaPoly_SHA256")
}
