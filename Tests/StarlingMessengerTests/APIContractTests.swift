import Foundation
import StarlingAPIContract
import StarlingMessengerAPI
import Testing

/// Issue 54: the API's contract is one definition. Its OpenAPI document is
/// built from the contract's types; the checked-in copy is current; the
/// daemon serves exactly the routes it lists; each event's schema says what
/// the event's JSON holds.
@Suite struct APIContractTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func object(_ v: JSONValue?) -> [String: JSONValue] {
        if case let .object(o)? = v { return o }
        return [:]
    }

    static func strings(_ v: JSONValue?) -> [String] {
        if case let .array(a)? = v { return a.compactMap { if case let .string(s) = $0 { s } else { nil } } }
        return []
    }

    @Test func theDocumentDescribesEveryEventAndEveryRoute() throws {
        let doc = try APIDocument.openAPI()
        let schemas = Self.object(doc["components"]?["schemas"])
        let mapping = Self.object(schemas["Event"]?["discriminator"]?["mapping"])
        #expect(mapping.keys.sorted() == APIEvent.kinds)
        #expect(APIEvent.kinds.count == 49, "\(APIEvent.kinds)")
        let paths = Self.object(doc["paths"])
        #expect(paths.count == Set(APIRoute.all.map(\.path)).count)
        // A field the type always writes is required; one it may leave out is not.
        let message = Self.object(schemas["Event_privateMessage"])
        let required = Self.strings(message["required"])
        #expect(required.contains("fingerprint") && required.contains("message") && required.contains("event"), "\(required)")
        #expect(!required.contains("via") && Self.object(message["properties"])["via"] != nil, "via is optional: \(required)")
        let status = try APISchema.of(APIStatus.self)
        #expect(Self.strings(status["required"]).contains("peerID") && !Self.strings(status["required"]).contains("udpPort"))
        #expect(Self.object(status["properties"])["udpPort"]?["minimum"] == .number(0), "an unsigned field is never negative")
        // Nested objects are described too (a conversation's last message, its file).
        let conversation = try APISchema.of(APIConversation.self)
        #expect(Self.object(conversation["properties"]?["last"]?["properties"])["file"]?["type"] == .array([.string("object"), .string("null")]),
                "an optional object: it may be absent or null")
    }

    /// docs/openapi.json is the document the daemon serves: regenerate it with
    /// `starling daemon --openapi > docs/openapi.json` when a type changes.
    @Test func theCheckedInDocumentIsCurrent() throws {
        let kept = try Data(contentsOf: Self.root.appendingPathComponent("docs/openapi.json"))
        let built = try APIDocument.json()
        #expect(kept == built, "docs/openapi.json is stale: run `swift run starling daemon --openapi > docs/openapi.json`")
        #expect(!built.isEmpty && built.count > 10_000, "a document of every route and event: \(built.count) bytes")
    }

    /// The router serves the routes the document lists, no more and no fewer
    /// (read from its source: Hummingbird's router does not list them).
    @Test func theDaemonServesExactlyTheDocumentedRoutes() throws {
        let folder = Self.root.appendingPathComponent("Sources/StarlingMessengerAPI")
        let source = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }.sorted()
            .map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")
        let pattern = try NSRegularExpression(pattern: #"v1\.(get|post|put|delete)\("([^"]+)"\)"#)
        var served: Set<String> = []
        for m in pattern.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
            let method = String(source[Range(m.range(at: 1), in: source)!])
            let path = String(source[Range(m.range(at: 2), in: source)!]).split(separator: "/").map { part in
                part.hasPrefix(":") ? "{" + part.dropFirst() + "}" : String(part)
            }.joined(separator: "/")
            served.insert("\(method) /v1/\(path)")
        }
        let documented = Set(APIRoute.all.map { "\($0.method.rawValue) \($0.path)" })
        #expect(served.count > 40, "the source was read: \(served.count) routes")
        #expect(served == documented, "served, not documented: \(served.subtracting(documented)); documented, not served: \(documented.subtracting(served))")
    }

    /// Every event's JSON has the fields its schema requires, and none it does not list.
    @Test func eachEventIsWhatItsSchemaSays() throws {
        let schemas = Self.object(try APIDocument.openAPI()["components"]?["schemas"])
        var checked = Set<String>()
        for event in MessengerClientTests.contractSamples {
            let o = try #require(try JSONSerialization.jsonObject(with: try event.json()) as? [String: Any])
            let schema = Self.object(schemas["Event_" + event.name])
            let properties = Set(Self.object(schema["properties"]).keys), required = Set(Self.strings(schema["required"]))
            #expect(required.isSubset(of: Set(o.keys)), "\(event.name): \(required.subtracting(o.keys)) missing")
            #expect(Set(o.keys).isSubset(of: properties), "\(event.name): \(Set(o.keys).subtracting(properties)) not in the schema")
            checked.insert(event.name)
        }
        #expect(checked == Set(APIEvent.kinds), "kinds with no sample: \(Set(APIEvent.kinds).subtracting(checked))")
        // The control: a field the schema does not know is seen.
        let peer = Self.object(schemas["Event_peer"])
        #expect(!Set(Self.object(peer["properties"]).keys).contains("teleported"))
    }
}

/// The page is one more client of the contract: it renders each event kind or
/// names it as not shown, and calls only documented routes.
@Suite struct PageContractTests {
    static let appJS = APIContractTests.root.appendingPathComponent("Sources/StarlingWebClient/Resources/app.js")

    static func matches(_ pattern: String, in text: String) throws -> [String] {
        let re = try NSRegularExpression(pattern: pattern)
        return re.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } }
    }

    @Test func thePageRendersOrNamesEveryEvent() throws {
        let js = try String(contentsOf: Self.appJS, encoding: .utf8)
        let rendered = Set(try Self.matches(#"case "([A-Za-z]+)":"#, in: js))
        let block = try #require(try Self.matches(#"const NOT_SHOWN = new Set\(\[([^\]]*)\]\)"#, in: js).first, "app.js names what it does not show")
        let notShown = Set(try Self.matches(#""([A-Za-z]+)""#, in: block))
        let kinds = Set(APIEvent.kinds)
        #expect(kinds.subtracting(rendered).subtracting(notShown).isEmpty, "neither rendered nor named: \(kinds.subtracting(rendered).subtracting(notShown).sorted())")
        #expect(rendered.intersection(notShown).isEmpty, "rendered and named as not shown: \(rendered.intersection(notShown))")
        #expect(rendered.union(notShown).subtracting(kinds).isEmpty, "not events of the contract: \(rendered.union(notShown).subtracting(kinds).sorted())")
        #expect(rendered.count > 25 && notShown.count > 5, "the page was read: \(rendered.count) rendered, \(notShown.count) not shown")
    }

    /// The page's own files stay small (issue 56: the first load under 150 KB, the
    /// API's answers included): 100 KB for index.html, app.js and app.css together.
    @Test func thePageStaysWithinItsWeight() throws {
        let dir = APIContractTests.root.appendingPathComponent("Sources/StarlingWebClient/Resources")
        let sizes = try ["index.html", "app.js", "app.css"].map { try Data(contentsOf: dir.appendingPathComponent($0)).count }
        #expect(sizes.allSatisfy { $0 > 1_000 }, "the files were read: \(sizes)")
        #expect(sizes.reduce(0, +) < 100_000, "the page's files weigh \(sizes.reduce(0, +)) bytes (index, app.js, app.css: \(sizes))")
    }

    @Test func thePageCallsOnlyDocumentedRoutes() throws {
        let js = try String(contentsOf: Self.appJS, encoding: .utf8)
        // "/v1/…" and `/v1/…${x}…`: each ${…} a path's part, the query left out.
        let called = try Self.matches(#"[`"](/v1/[^`"?]*)"#, in: js).map { $0.replacingOccurrences(of: #"\$\{[^}]*\}"#, with: "{x}", options: .regularExpression) }
        #expect(called.count > 25, "\(called)")
        let documented = APIRoute.all.map { $0.path.replacingOccurrences(of: #"\{[^}]*\}"#, with: "{x}", options: .regularExpression) }
        for path in Set(called) where !path.hasSuffix("/") && !path.contains(" ") {
            #expect(documented.contains(path), "the page calls \(path), which docs/openapi.json does not list")
        }
    }
}
