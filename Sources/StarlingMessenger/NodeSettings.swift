import Foundation
import StarlingTransport

/// What a person can change of a node from a face (the web page's settings):
/// the Ya OK server, Nostr on or off, and the SOCKS5 proxy Nostr goes through.
/// Kept in `settings.json` in the data directory (0600), read when a node
/// starts on that directory; options given on the command line win over it.
public struct NodeSettings: Codable, Sendable, Equatable {
    /// The Ya OK server, HOST:PORT (a host name, an IPv4 address or an IPv6 one in brackets), or nil: none.
    public var server: String?
    /// Mutual favourites out of mesh range are reached over Nostr.
    public var nostr: Bool
    /// The SOCKS5 proxy that Nostr traffic goes through, HOST:PORT.
    public var proxy: String

    public static let defaultProxy = "127.0.0.1:9050"
    public static let fileName = "settings.json"

    public init(server: String? = nil, nostr: Bool = false, proxy: String = NodeSettings.defaultProxy) {
        self.server = server
        self.nostr = nostr
        self.proxy = proxy
    }

    /// A setting that cannot be, in words.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Throws ``Invalid`` for an address that cannot be used.
    public func validate() throws {
        if let server, UDPAddress.hostList(server) == nil {
            throw Invalid(description: "server \(server): expected HOST:PORT (a host name, an IPv4 address or an IPv6 one in brackets), for example 192.168.1.20:7878, or several separated by commas")
        }
        let parts = proxy.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 253, let port = Int(parts[1]), (1...65_535).contains(port) else {
            throw Invalid(description: "proxy \(proxy): expected HOST:PORT, for example \(Self.defaultProxy) (Tor's)")
        }
    }

    /// The settings kept in `directory`, or nil when none were ever saved.
    public static func load(from directory: URL) throws -> NodeSettings? {
        let file = directory.appendingPathComponent(fileName)
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        let settings: NodeSettings
        do { settings = try JSONDecoder().decode(NodeSettings.self, from: data) } catch {
            throw Invalid(description: "\(file.path) is not a settings file (\(error)): fix it or remove it")
        }
        do { try settings.validate() } catch let e as Invalid {
            throw Invalid(description: "\(file.path): \(e.description)")
        }
        return settings
    }

    /// Writes them to `directory` (whole, or not at all: a new file renamed over the old).
    public func save(in directory: URL) throws {
        try validate()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let file = directory.appendingPathComponent(Self.fileName)
        let temporary = directory.appendingPathComponent(".\(Self.fileName).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw Invalid(description: "\(directory.path) could not be written: check its permissions and free space")
        }
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw Invalid(description: "\(file.path) could not be written: \(reason)")
        }
    }
}
