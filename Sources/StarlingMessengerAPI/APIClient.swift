import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A client of a running daemon's API, as the command line uses it: the
/// address and token from `api.json`, HTTP/1.1 on connections kept open
/// between calls, and the event stream.
public struct APIClient: Sendable {
    public let host: String
    public let port: Int
    public let token: String
    /// The Unix socket to connect to instead of host and port.
    public let socketPath: String?

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let status: Int
        public let message: String
        public var description: String { message }
    }

    /// The daemon of a data directory, when one runs there and answers
    /// (`api.json` names it; a file left by one that died is ignored).
    public static func find(directory: URL) async -> APIClient? {
        let path = directory.appendingPathComponent("api.json")
        guard let data = FileManager.default.contents(atPath: path.path),
              let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let url = (o["url"] as? String).flatMap(URL.init(string:)), let host = url.host, let port = url.port,
              let token = o["token"] as? String else { return nil }
        if let pid = o["pid"] as? Int, kill(pid_t(pid), 0) != 0, errno == ESRCH { return nil }
        let client = APIClient(host: host, port: port, token: token)
        guard (try? await client.get("/v1/status")) != nil else { return nil }
        return client
    }

    public init(host: String, port: Int, token: String) {
        self.host = host
        self.port = port
        self.token = token
        socketPath = nil
    }

    /// A client of the API's Unix socket.
    public init(socketPath: String, token: String) {
        host = "localhost"
        port = 0
        self.token = token
        self.socketPath = socketPath
    }

    public func get(_ path: String) async throws -> Any {
        try await request(.GET, path, body: nil)
    }

    public func post(_ path: String, _ body: [String: Any]) async throws -> Any {
        try await request(.POST, path, body: try JSONSerialization.data(withJSONObject: body))
    }

    /// Sends a file as a request's body, read a MiB at a time (any size, never
    /// whole in memory); the JSON it answers.
    public func upload(_ path: String, file: URL) async throws -> Any {
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
        let (status, data, server) = try await exchange(.POST, path, body: nil, stream: nil, file: (FileChunks(url: file), size))
        let json = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) ?? [:]
        guard (200..<300).contains(status) else {
            throw Self.refusal(status, json, data, server: server)
        }
        return json
    }

    /// A file's bytes, a MiB at a time.
    struct FileChunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let url: URL
        struct AsyncIterator: AsyncIteratorProtocol {
            let handle: FileHandle?
            let error: (any Error)?
            mutating func next() async throws -> ByteBuffer? {
                if let error { throw error }
                guard let handle, let data = try handle.read(upToCount: 1 << 20), !data.isEmpty else {
                    try handle?.close()
                    return nil
                }
                return ByteBuffer(data: data)
            }
        }
        func makeAsyncIterator() -> AsyncIterator {
            do { return AsyncIterator(handle: try FileHandle(forReadingFrom: url), error: nil) } catch {
                return AsyncIterator(handle: nil, error: error)
            }
        }
    }

    /// Headers sent with every request (tests: another Origin).
    public var extraHeaders: [(String, String)] = []

    /// One request's status and body, whatever the status (tests).
    public func raw(_ method: HTTPMethod, _ path: String) async throws -> (status: Int, body: Data) {
        let (status, body, _) = try await exchange(method, path, body: nil, stream: nil)
        return (status, body)
    }

    /// A refusal in the API's own sentence; an answer without one says what came
    /// instead: its body, and who answered (the API's answers name the server
    /// "starling"; an HTTP-level refusal, a request the server could not read,
    /// names none).
    static func refusal(_ status: Int, _ json: Any, _ body: Data, server: String?) -> Failure {
        if let message = ((json as? [String: Any])?["error"] as? [String: Any])?["message"] as? String {
            return Failure(status: status, message: message)
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Failure(status: status, message: "the daemon answered \(status) " + (text.isEmpty ? "with an empty body" : "with \"\(text)\"")
                       + (server.map { " (server \"\($0)\")" } ?? " (no server named)"))
    }

    /// One request; the JSON it answers, or a ``Failure`` with the API's sentence.
    public func request(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> Any {
        let (status, data, server) = try await exchange(method, path, body: body, stream: nil)
        let json = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) ?? [:]
        guard (200..<300).contains(status) else {
            throw Self.refusal(status, json, data, server: server)
        }
        return json
    }

    /// The event stream from `since`: each event's JSON (one object), as it comes, until the daemon stops.
    public func events(since: UInt64 = 0) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    // Bytes, split on the blank line that ends an event: a character cut
                    // between two reads is whole again before it is decoded.
                    var pending: [UInt8] = []
                    let (status, body, server) = try await exchange(.GET, "/v1/events?since=\(since)", body: nil) { chunk in
                        pending += chunk
                        while let end = Self.blankLine(in: pending) {
                            let block = String(decoding: pending[..<end], as: UTF8.self)
                            pending.removeSubrange(..<(end + 2))
                            for line in block.split(separator: "\n") where line.hasPrefix("data: ") {
                                continuation.yield(Data(line.dropFirst(6).utf8))
                            }
                        }
                    }
                    guard (200..<300).contains(status) else {
                        throw Self.refusal(status, (try? JSONSerialization.jsonObject(with: body)) ?? [:], body, server: server)
                    }
                    continuation.finish()
                } catch {
                    // The consumer's own cancel ends the stream cleanly; anything else is an error.
                    if Task.isCancelled { continuation.finish() } else { continuation.finish(throwing: error) }
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Where the first blank line ("\n\n") begins.
    static func blankLine(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for i in 0..<(bytes.count - 1) where bytes[i] == 0x0A && bytes[i + 1] == 0x0A { return i }
        return nil
    }

    /// The HTTP client of every ``APIClient`` in the process: connections kept
    /// open between calls (a call costs no new connection), over TCP or the
    /// Unix socket. A daemon is on this machine, so a refused connection is
    /// an answer: it fails the call at once, never retried with backoff for
    /// the connect timeout (the shared client's 90 s: a chat whose daemon
    /// stopped just as it subscribed to the events hung that long). A stream
    /// silent past 60 s (the daemon's heartbeat is 15 s) is taken as ended.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(60))
        configuration.connectionPool.retryConnectionEstablishment = false
        // A connection a call: a daemon restarted on the same port (or another
        // daemon given the port a stopped one had) is never asked through a
        // connection kept from the one before (a call on loopback costs a
        // connection's setup, ~0.1 ms).
        configuration.maximumUsesPerConnection = 1
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Sends a request and reads the answer: whole, or chunk by chunk to `stream`.
    func exchange(_ method: HTTPMethod, _ path: String, body: Data?, stream: (([UInt8]) -> Void)?,
                  file: (chunks: FileChunks, size: Int)? = nil) async throws -> (Int, Data, server: String?) {
        let url: String
        if let socketPath {
            guard let u = URL(httpURLWithSocketPath: socketPath, uri: path) else { throw Failure(status: 0, message: "not a socket path: \(socketPath)") }
            url = u.absoluteString
        } else {
            url = "http://\(host):\(port)\(path)"
        }
        var request = HTTPClientRequest(url: url)
        request.method = method
        if socketPath != nil { request.headers.add(name: "Host", value: "localhost") }
        if !token.isEmpty { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extraHeaders { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        if let file {
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.body = .stream(file.chunks, length: .known(Int64(file.size)))
        }
        // A call is answered at once (an upload within an hour). The deadline bounds
        // the answer's head: the event stream's body lasts as long as its reader.
        let deadline: NIODeadline = file != nil ? .now() + .hours(1) : .now() + .seconds(60)
        let response = try await Self.http.execute(request, deadline: deadline)
        let status = Int(response.status.code)
        var data = Data()
        for try await buffer in response.body {
            if let stream, (200..<300).contains(status) {
                stream(Array(buffer.readableBytesView))
            } else {
                data.append(contentsOf: buffer.readableBytesView)
                guard data.count <= 64 << 20 else { throw Failure(status: status, message: "the daemon's answer is over 64 MiB") }
            }
        }
        return (status, data, response.headers.first(name: "server"))
    }
}
