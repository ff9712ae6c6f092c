import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOHTTP1
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Hummingbird's router served as `Application.run()` serves it, less its date
/// cache: that service wakes every second to format the `Date` header, two
/// wakes a second for the daemon's two listeners, for as long as it idles
/// (issue 52: the daemon's idle CPU). Here each answer's date is formatted
/// when it is made (a local API answers a handful of requests a second at most).
struct QuietHTTPService<Responder: HTTPResponder>: Service
where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    let responder: Responder
    let address: BindAddress
    let serverName: String
    let logger: Logger
    let onServerRunning: @Sendable (any Channel) async -> Void

    func run() async throws {
        let responder = self.responder, logger = self.logger, serverName = self.serverName
        let server = try HTTPServerBuilder.http1().buildServer(
            configuration: ServerConfiguration(address: address, serverName: serverName),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger
        ) { (request, responseWriter: consuming ResponseWriter, channel) in
            let context = Responder.Context(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error
            } catch {
                logger.debug("unrecognised error", metadata: ["error": "\(error)"])
                response = Response(status: .internalServerError, body: .init())
            }
            response.headers[.date] = Self.date(Date())
            response.headers[.server] = serverName
            try await responseWriter.write(response: response.head, body: response.body)
        } onServerRunning: { channel in
            await onServerRunning(channel)
        }
        try await server.run()
    }

    /// RFC 9110's IMF-fixdate: "Sun, 29 Nov 2026 05:27:03 GMT".
    static func date(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
