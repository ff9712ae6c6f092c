import Foundation

/// Where a node keeps its state: `$XDG_DATA_HOME/starling`, else
/// `~/.local/share/starling`, unless a directory is given (`--data-dir`).
public struct DataDirectory: Sendable {
    public let url: URL

    public init(explicit path: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let path {
            url = URL(fileURLWithPath: path, isDirectory: true)
        } else if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            url = URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("starling", isDirectory: true)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            url = URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".local/share/starling", isDirectory: true)
        }
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Creates the directory (0700) when missing.
    public func create() throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }
}
