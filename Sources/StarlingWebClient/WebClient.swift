import Foundation

/// The browser's face of the messenger (`starling web`): plain HTML, CSS and
/// JavaScript, no build step and nothing fetched from elsewhere. The page is
/// one more client of the daemon's API: it reads the token from its URL's
/// fragment (never sent in a request line) and decides nothing itself.
public enum WebClient {
    /// A file of the page: its path on the server, its type, its bytes.
    public struct File: Sendable {
        public let path: String
        public let contentType: String
        public let bytes: Data
    }

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// The page's files, from the package's resources.
    public static func files() throws -> [File] {
        let names: [(String, String, String)] = [("index.html", "/", "text/html; charset=utf-8"),
                                                 ("app.js", "/app.js", "text/javascript; charset=utf-8"),
                                                 ("app.css", "/app.css", "text/css; charset=utf-8")]
        return try names.map { name, path, type in
            guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Resources") ?? Bundle.module.url(forResource: name, withExtension: nil),
                  let bytes = FileManager.default.contents(atPath: url.path) else {
                throw Missing(description: "the web page's \(name) is not beside the starling binary (its resource bundle): build with swift build, or copy Starling_StarlingWebClient.resources with the binary")
            }
            return File(path: path, contentType: type, bytes: bytes)
        }
    }

    /// What the page may load and reach: itself only (no other host, no inline script).
    public static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' data: blob:; media-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}
