import Foundation
import StarlingAPIContract
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import StarlingBulkTransport
import StarlingCrypto
import StarlingMessenger
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingQR
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The messenger's local API (docs/API.md): versioned JSON over HTTP/1.1 on
/// 127.0.0.1 and on a Unix socket (0600), every request with the bearer
/// token of `api.json` (0600) or 401 before any routing; a request from a web
/// page of another origin, or naming another host, is refused (403). It
/// decides nothing: each call is a messenger's or the node's command.
public final class APIServer: Sendable {
    public struct Configuration: Sendable {
        /// The data directory: `api.json` and `api.sock` go there.
        public var directory: URL
        /// The TCP port on 127.0.0.1 (0: any free one).
        public var port: Int = 0
        public var token: String
        /// Events kept for clients that reconnect.
        public var eventCapacity = 10_000
        /// How often a quiet event stream carries a comment line: a client that went
        /// away is found at the next write, and its place among the 64 freed.
        public var heartbeat: Duration = .seconds(15)
        /// Files served without the token (a web page: it holds no secret, and
        /// reads the token from its own URL's fragment), each with `policy`
        /// as its Content-Security-Policy.
        public var files: [StaticFile] = []
        public var policy = "default-src 'none'"
        /// The settings the node runs with, and which of them its command line set.
        public var settings = NodeSettings()
        public var setOnCommandLine: Set<String> = []
        /// The largest file `POST /v1/files/upload` takes (the bulk format's 4 GiB).
        public var maxUpload = Int(UInt32.max)
        /// The node's kept offers (files/offered, docs/BULK.md): the uploads
        /// they name outlive a restart, so that a receiver's download resumes.
        public var keptOffers: URL?
        public init(directory: URL, token: String = APIServer.newToken()) {
            self.directory = directory
            self.token = token
        }
    }

    /// A file the API serves to anyone who may reach it (the web page).
    public struct StaticFile: Sendable {
        public let path: String
        public let contentType: String
        public let bytes: Data
        public init(path: String, contentType: String, bytes: Data) {
            self.path = path
            self.contentType = contentType
            self.bytes = bytes
        }
    }

    public let configuration: Configuration
    /// What the routes call: the messenger and node of this process.
    public let client: LocalMessengerClient
    public var messenger: Messenger { client.messenger }
    public let log: EventLog
    let bound = BoundPort()

    public init(client: LocalMessengerClient, configuration: Configuration) {
        self.client = client
        self.configuration = configuration
        log = EventLog(capacity: configuration.eventCapacity)
        let outgoing = configuration.directory.appendingPathComponent("files/outgoing", isDirectory: true)
        uploads = Uploads.atStart(keptOffers: configuration.keptOffers, outgoing: outgoing)
    }

    /// 32 random bytes, hex.
    public static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }.map { String(format: "%02x", $0) }.joined()
    }

    public var socketPath: String { configuration.directory.appendingPathComponent("api.sock").path }
    public var infoPath: String { configuration.directory.appendingPathComponent("api.json").path }

    actor BoundPort {
        var port: Int?
        var waiters: [CheckedContinuation<Int, Never>] = []
        func set(_ p: Int) {
            port = p
            for w in waiters { w.resume(returning: p) }
            waiters = []
        }
        func wait() async -> Int {
            if let port { return port }
            return await withCheckedContinuation { waiters.append($0) }
        }
    }

    /// The TCP port once bound.
    public var port: Int { get async { await bound.wait() } }

    /// Takes the messenger's events into the log until they end.
    public func record() async {
        for await event in messenger.events {
            if case let .node(.fileReceived(_, _, _, path, transferID)) = event { await received.add(transferID, path) }
            if case let .node(.voiceNote(_, path, _, _, id, _)) = event { await received.add(id, path) }
            switch event {
            case let .node(.delivered(id, _)), let .node(.failed(id, _)): await uploads.ended(id)
            default: break
            }
            for e in APIEvent.of(event) { await log.append(e) }
        }
        await log.finish()
    }

    /// Files that came, by transfer ID, for `GET /v1/files/ID` (the newest 1,000;
    /// only what the node saved in the data directory's files/incoming).
    actor ReceivedFiles {
        var paths: [String: String] = [:]
        var order: [String] = []
        func add(_ id: String, _ path: String) {
            if paths[id] == nil { order.append(id) }
            paths[id] = path
            while order.count > 1_000 { paths[order.removeFirst()] = nil }
        }
        func path(_ id: String) -> String? { paths[id] }
    }
    let received = ReceivedFiles()
    let uploads: Uploads

    /// Files uploaded to send (`POST /v1/files/upload`), each in a directory of
    /// its own under files/outgoing, removed once its transfer ends (saved,
    /// declined, failed). At the daemon's start, the copies a kept offer names
    /// are adopted (their transfer may resume) and all others removed.
    actor Uploads {
        /// By transfer ID, in the order sent (the oldest is evicted first).
        var byTransfer: [String: URL] = [:]
        var order: [String] = []
        /// The daemon's bound: at most 64 offers are served at once, so 128 is plenty.
        static let capacity = 128

        /// The directories of the uploads adopted at the start; nil when the
        /// kept offers could not be read (then every directory is kept).
        nonisolated let keptAtStart: Set<String>?

        /// Adopts the uploads `kept` names; nil: what is kept is unknown, so
        /// nothing is adopted and nothing will be cleared.
        init(adopting kept: [String: URL]?) {
            keptAtStart = kept.map { Set($0.values.map { $0.deletingLastPathComponent().lastPathComponent }) }
            for (id, url) in (kept ?? [:]).sorted(by: { $0.key < $1.key }) {
                byTransfer[id] = url
                order.append(id)
            }
        }

        /// The uploads a start adopts: the kept offers' files that are copies
        /// under `outgoing`. Kept offers that cannot be read adopt none and
        /// clear none (a daemon that cannot read them must not delete what a
        /// resuming receiver still needs).
        static func atStart(keptOffers: URL?, outgoing: URL) -> Uploads {
            guard let keptOffers else { return Uploads(adopting: [:]) }
            guard let files = try? KeptOffers(directory: keptOffers).files() else { return Uploads(adopting: nil) } // unreadable: keep all
            return Uploads(adopting: files.filter {
                $0.value.deletingLastPathComponent().deletingLastPathComponent().standardizedFileURL.path == outgoing.standardizedFileURL.path
            })
        }

        /// The directories under `outgoing` that no adopted transfer names are
        /// removed: uploads of an earlier run whose offers are gone. `keeping`
        /// nil removes nothing.
        nonisolated static func clear(_ outgoing: URL, keeping: Set<String>?) throws {
            let fm = FileManager.default
            guard let keeping, fm.fileExists(atPath: outgoing.path) else { return }
            for name in try fm.contentsOfDirectory(atPath: outgoing.path) where !keeping.contains(name) {
                try fm.removeItem(at: outgoing.appendingPathComponent(name))
            }
        }

        func receive(_ body: RequestBody, name: String, into outgoing: URL, limit: Int) async throws -> (url: URL, size: Int) {
            let dir = outgoing.appendingPathComponent(UUID().uuidString, isDirectory: true)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let url = dir.appendingPathComponent(name)
            var size = 0
            do {
                guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                    throw APIError(.internalServerError, "cannot write in \(dir.path)")
                }
                let handle = try FileHandle(forWritingTo: url)
                defer { try? handle.close() } // closing after a failed write: the failure is what is said
                for try await buffer in body {
                    size += buffer.readableBytes
                    guard size <= limit else { throw APIError(.contentTooLarge, "a file to send is at most \(limit >> 20) MiB") }
                    try buffer.withUnsafeReadableBytes { try handle.write(contentsOf: $0) }
                }
                try handle.synchronize()
            } catch {
                try? FileManager.default.removeItem(at: dir) // half an upload is not kept
                if let e = error as? APIError { throw e }
                throw APIError(.init(code: 507, reasonPhrase: "Insufficient Storage"), "the upload could not be written (\(error.localizedDescription)); free some disk and try again")
            }
            return (url, size)
        }

        func sending(_ id: String, _ url: URL) {
            if byTransfer.updateValue(url, forKey: id) == nil { order.append(id) }
            // At most 64 are served at once (the listener's bound): the oldest are gone.
            while order.count > Self.capacity {
                let old = order.removeFirst()
                if let file = byTransfer.removeValue(forKey: old) {
                    try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) // a leftover goes at the next start
                }
            }
        }

        func ended(_ id: String) {
            guard let url = byTransfer.removeValue(forKey: id) else { return }
            order.removeAll { $0 == id }
            try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) // a leftover goes at the next start
        }
    }

    // MARK: Serving

    /// The two applications (TCP and Unix socket); run them as services. `api.json`
    /// is written once the TCP port is known.
    public func applications(logger: Logger) throws -> [any Service] {
        try? FileManager.default.removeItem(atPath: socketPath)
        // Uploads of an earlier run whose offers are gone (those still offered are kept: they may resume).
        try Uploads.clear(configuration.directory.appendingPathComponent("files/outgoing"), keeping: uploads.keptAtStart)
        let router = makeRouter()
        let info = infoPath, token = configuration.token, socket = socketPath, bound = self.bound
        let tcp = QuietHTTPService(responder: router.buildResponder(), address: .hostname("127.0.0.1", port: configuration.port),
                                   serverName: "starling", logger: logger) { channel in
            let port = channel.localAddress?.port ?? 0
            do {
                try Self.writeInfo(path: info, port: port, socket: socket, token: token)
                try Self.keep(port: port, in: URL(fileURLWithPath: info).deletingLastPathComponent())
            } catch {
                logger.error("api.json could not be written: \(error)")
            }
            await bound.set(port)
        }
        let unix = QuietHTTPService(responder: makeRouter().buildResponder(), address: .unixDomainSocket(path: socket),
                                    serverName: "starling", logger: logger) { _ in
            // Only this user may connect.
            chmod(socket, 0o600)
        }
        return [tcp, unix]
    }

    /// The token kept in `api-token` (0600) of the data directory, made on first
    /// use: a page or script given the link keeps working when the daemon restarts.
    public static func keptToken(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("api-token").path
        var info = stat()
        // (One others could read may have leaked: a new one then.)
        if lstat(path, &info) == 0, info.st_mode & 0o077 == 0, (info.st_mode & S_IFMT) == S_IFREG,
           let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.count == 64, text.allSatisfy(\.isHexDigit) { return text }
        }
        let token = newToken()
        try writePrivately(path: path, bytes: Array(token.utf8))
        return token
    }

    /// The port kept in `api-port` from the last run, if 127.0.0.1 has it free
    /// now (0: none kept, or taken: a free one is picked).
    public static func keptPort(in directory: URL) -> Int {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent("api-port").path),
              let port = UInt16(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)), port >= 1_024,
              isFree(port) else { return 0 }
        return Int(port)
    }

    static func keep(port: Int, in directory: URL) throws {
        try writePrivately(path: directory.appendingPathComponent("api-port").path, bytes: Array("\(port)\n".utf8))
    }

    /// Whether a TCP socket can bind 127.0.0.1:`port` now.
    static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var one: Int32 = 1 // as the server's own socket: a past run's connections waiting out TIME_WAIT do not count
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// `api.json`, 0600: where the API is and the token it wants.
    static func writeInfo(path: String, port: Int, socket: String, token: String) throws {
        let o: [String: Any] = ["version": 1, "url": "http://127.0.0.1:\(port)", "socket": socket, "token": token,
                                "pid": Int(getpid())]
        try writePrivately(path: path, bytes: [UInt8](APIJSON.data(o)))
    }

    /// Written whole, readable by this user only from its first byte (open(2) 0600, then rename).
    static func writePrivately(path: String, bytes: [UInt8]) throws {
        let tmp = path + ".tmp"
        // Made 0600 from the start (the token is never readable by anyone else, not for a moment).
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw APIError(.internalServerError, "cannot write \(tmp): \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard fchmod(fd, 0o600) == 0, written == bytes.count, fsync(fd) == 0 else {
            close(fd)
            throw APIError(.internalServerError, "cannot write \(tmp)")
        }
        close(fd)
        guard rename(tmp, path) == 0 else { throw APIError(.internalServerError, "cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    /// Removes `api.json` and the socket (the daemon stops).
    public func removeFiles() {
        try? FileManager.default.removeItem(atPath: infoPath)
        try? FileManager.default.removeItem(atPath: socketPath)
    }

    // MARK: Routes

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: OneErrorShape())
        router.add(middleware: Guard(token: configuration.token, bound: bound, open: Set(configuration.files.map(\.path))))
        router.add(middleware: JSONBodies())
        router.add(middleware: ActionsAreActivity(messenger: client.messenger))
        for file in configuration.files {
            let policy = configuration.policy
            router.get(RouterPath(file.path)) { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = file.contentType
                headers[.cacheControl] = "no-store"
                headers[HTTPField.Name("Content-Security-Policy")!] = policy
                headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
                headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
                headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: file.bytes)))
            }
        }
        let v1 = router.group("v1")
        // One function a resource (Routes*.swift); APIRoute.all lists them all.
        addNodeRoutes(v1)
        addPeopleRoutes(v1)
        addConversationsRoutes(v1)
        addFilesRoutes(v1)
        addPublicRoutes(v1)
        addStoreRoutes(v1)
        addEventsRoutes(v1)
        return router
    }

    /// A path parameter, percent-decoded (a group's name may hold spaces).
    static func named(_ context: some RequestContext, _ key: String) throws -> String {
        let raw = try context.parameters.require(key)
        return raw.removingPercentEncoding ?? raw
    }

    /// A face's request carried out; its refusal as the status it is.
    @discardableResult
    static func call<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let e as MessengerClientError {
            let status: HTTPResponse.Status = switch e.kind {
            case .badRequest: .badRequest
            case .notFound: .notFound
            case .conflict: .conflict
            case .locked: .locked
            case .forbidden: .forbidden
            case .unavailable: .serviceUnavailable
            case .failed: .internalServerError
            }
            throw APIError(status, e.description)
        }
    }

    /// A file name for a header: letters, digits, dot, dash and underscore; the rest as "_".
    static func safeName(_ name: String) -> String {
        String(name.unicodeScalars.prefix(128).map { s -> Character in
            (s.isASCII && (CharacterSet.alphanumerics.contains(s) || ".-_".unicodeScalars.contains(s))) ? Character(s) : "_"
        })
    }

    static func peer(_ context: BasicRequestContext) throws -> PeerID {
        let text = try context.parameters.require("peer")
        guard let p = PeerID(hex: text.lowercased()) else { throw APIError(.badRequest, "a peer ID is 16 hex digits") }
        return p
    }

    static func conversation(_ context: BasicRequestContext) throws -> UserID {
        let text = try context.parameters.require("id")
        guard let id = UserID(string: text) else { throw APIError(.badRequest, "a conversation ID is a UUID") }
        return id
    }

    /// The data directory's saved settings; a file that cannot be read is a 500 in words.
    static func savedSettings(in directory: URL) throws(APIError) -> NodeSettings? {
        do { return try NodeSettings.load(from: directory) } catch { throw APIError(.internalServerError, "\(error)") }
    }

    /// A query parameter: absent, or of its type (a word where a number belongs is refused, not ignored).
    static func query<T: LosslessStringConvertible>(_ request: Request, _ name: String, as type: T.Type) throws -> T? {
        let all = request.uri.queryParameters.getAll(name)
        guard let text = all.first else { return nil }
        guard all.count == 1, let value = T(String(text)) else { throw APIError(.badRequest, "\(name) is one \(T.self is any BinaryInteger.Type ? "whole number" : "value")") }
        return value
    }

    /// An answer of the contract's (StarlingAPIContract), as JSON.
    static func answer<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let data: Data
        do { data = try APIJSONCoding.data(value) } catch { throw APIError(.internalServerError, "the answer could not be written: \(error)") }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}

/// An API error: a status and one sentence, as `{"error": {"status": N, "message": "…"}}`.
public struct APIError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let message: String
    /// The methods a path takes, for a 405.
    public var allow: String?
    public init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }
    public var headers: HTTPFields {
        var h: HTTPFields = [.contentType: "application/json"]
        if let allow { h[HTTPField.Name("Allow")!] = allow }
        return h
    }
    public func body(allocator: ByteBufferAllocator) -> ByteBuffer? {
        ByteBuffer(data: (try? APIJSONCoding.data(APIErrorAnswer(status: Int(status.code), message: message))) ?? Data())
    }
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: headers, body: .init(byteBuffer: body(allocator: ByteBufferAllocator()) ?? ByteBuffer()))
    }
}

extension HTTPResponse.Status {
    /// 423: the store is locked.
    static let locked = HTTPResponse.Status(code: 423, reasonPhrase: "Locked")
}

/// Every refusal in the API's one shape (`{"error": {"status", "message"}}`,
/// docs/openapi.json): Hummingbird's own (a body that does not decode, no such
/// route, a body too large) are said as ours. Schemathesis found the first.
struct OneErrorShape: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as APIError {
            throw e
        } catch let e as HTTPError {
            // A documented path with another method: 405, and what it takes.
            if e.status == .notFound, case let methods = Self.methods(of: request.uri.path), !methods.isEmpty {
                var refusal = APIError(.methodNotAllowed, "\(request.uri.path) takes \(methods.joined(separator: ", ")), not \(request.method)")
                refusal.allow = methods.joined(separator: ", ")
                throw refusal
            }
            throw APIError(e.status, Self.words(e, request))
        }
    }

    /// The methods the documented routes take at `path` (a `{name}` matches any one part).
    static func methods(of path: String) -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // A path written out (/v1/files/upload) is its own, not an instance of /v1/files/{id}.
        let exact = APIRoute.all.filter { $0.path == path }
        let matching = exact.isEmpty ? APIRoute.all.filter { route in
            let pattern = route.path.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.count == parts.count && zip(pattern, parts).allSatisfy { $0.hasPrefix("{") ? !$1.isEmpty : $0 == $1 }
        } : exact
        return matching.map { $0.method.rawValue.uppercased() }
    }

    static func words(_ e: HTTPError, _ request: Request) -> String {
        switch e.status {
        case .badRequest:
            // A body that does not decode: the decoder's words end with what it found.
            let detail = (e.body ?? "").replacingOccurrences(of: "The given data was not valid input: ", with: "")
            return "the body is not what \(request.method) \(request.uri.path) takes (docs/openapi.json)" + (detail.isEmpty ? "" : ": \(detail.prefix(300))")
        case .notFound: return "no such call: \(request.method) \(request.uri.path) (docs/openapi.json lists them)"
        case .contentTooLarge: return "the body is too large for \(request.uri.path)"
        case .methodNotAllowed: return "\(request.uri.path) does not take \(request.method) (docs/openapi.json lists what it takes)"
        default: return e.body ?? "\(e.status.code) \(e.status.reasonPhrase)"
        }
    }
}

/// After the token: a JSON body says so. What a cross-site form can send
/// (text/plain, a form's encoding) is not JSON here, and is refused before a
/// route reads it (Schemathesis found a settings change sent as text/plain taken).
struct JSONBodies: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method == .post || request.method == .put, request.uri.path.hasPrefix("/v1/"), request.uri.path != "/v1/files/upload",
           let type = request.headers[.contentType], !type.lowercased().hasPrefix("application/json") {
            throw APIError(.unsupportedMediaType, "a body here is JSON, sent with Content-Type: application/json (curl --json), not \(type)")
        }
        return try await next(request, context)
    }
}

/// A change a face asked for (POST, PUT, DELETE that succeeded) is a person's
/// doing: the auto-lock's idle time starts again when it is done (after an
/// unlock, from the moment the store is open). Reads (GET, the event stream)
/// are not: a program that only watches never holds the store open.
struct ActionsAreActivity: RouterMiddleware {
    typealias Context = BasicRequestContext
    let messenger: Messenger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        if request.method == .post || request.method == .put || request.method == .delete,
           request.uri.path.hasPrefix("/v1/"), request.uri.path != "/v1/store/lock" {
            await messenger.noteActivity()
        }
        return response
    }
}

/// Before any route: the bearer token, then where the request comes from. A
/// browser's request from another site carries its Origin; a DNS-rebinding
/// page names another Host: both are refused.
struct Guard: RouterMiddleware {
    typealias Context = BasicRequestContext
    let token: String
    let bound: APIServer.BoundPort
    /// Paths anyone who reaches the API may GET (the web page's files): no token, the same Host check.
    var open: Set<String> = []

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[.authorization] ?? ""
        let isOpen = request.method == .get && open.contains(request.uri.path)
        guard isOpen || Self.equal(Array(given.utf8), Array("Bearer \(token)".utf8)) else {
            throw APIError(.unauthorized, "a request needs the token of api.json: Authorization: Bearer TOKEN")
        }
        // A Host with a port, or an Origin, is checked against the TCP port: known once
        // the listener runs (a request between then and api.json's writing waits for it;
        // it was refused for its Host). The Unix socket's clients say "localhost": no wait.
        let host = request.head.authority ?? "", origin = request.headers[.origin]
        if (!host.isEmpty && host != "localhost") || origin != nil {
            let port = await bound.wait()
            let allowedHosts: Set<String> = ["127.0.0.1:\(port)", "localhost:\(port)"]
            if !host.isEmpty, host != "localhost", !allowedHosts.contains(host) {
                throw APIError(.forbidden, "the API answers on 127.0.0.1 only, not \(host)")
            }
            if let origin, !allowedHosts.contains(where: { origin == "http://\($0)" }) {
                throw APIError(.forbidden, "requests from another origin (\(origin)) are refused")
            }
        }
        return try await next(request, context)
    }

    /// Compares in time that does not depend on where they differ.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var d: UInt8 = 0
        for i in a.indices { d |= a[i] ^ b[i] }
        return d == 0
    }
}
