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

// The event stream (server-sent events).
extension APIServer {
    func addEventsRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let log = self.log, heartbeat = configuration.heartbeat
        v1.get("events") { request, _ in
            // Server-sent events: each `id: SEQ` and `data: JSON`; a client resumes with
            // ?since=SEQ or Last-Event-ID, and hears of a gap it cannot get back.
            let since = try Self.query(request, "since", as: UInt64.self)
                ?? request.headers[HTTPField.Name("Last-Event-ID")!].flatMap { UInt64($0) } ?? 0
            guard let stream = await log.follow(after: since) else { throw APIError(.tooManyRequests, "too many clients follow the events") }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            // The events and, while none come, a heartbeat: a write to a client
            // that left fails, which ends its stream and frees its place.
            // (Bounded as the log's own buffer: a client a whole ring behind is ended, to reconnect and hear of the gap.)
            let (merged, feed) = AsyncStream.makeStream(of: EventLog.Entry?.self, bufferingPolicy: .bufferingOldest(log.capacity + 2))
            let pump = Task {
                for await e in stream {
                    if case .dropped = feed.yield(e) { break }
                }
                feed.finish()
            }
            let beat = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: heartbeat)
                    feed.yield(nil)
                }
            }
            feed.onTermination = { _ in
                pump.cancel()
                beat.cancel()
            }
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                defer { feed.finish() }
                try await writer.write(ByteBuffer(string: ": starling events\n\n"))
                for await item in merged {
                    guard let entry = item else {
                        try await writer.write(ByteBuffer(string: ": \n\n"))
                        continue
                    }
                    var b = ByteBuffer(string: "id: \(entry.seq)\ndata: ")
                    b.writeBytes(entry.json)
                    b.writeString("\n\n")
                    try await writer.write(b)
                }
                try await writer.finish(nil)
            })
        }
    }
}
