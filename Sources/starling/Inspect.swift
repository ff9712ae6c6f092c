import ArgumentParser
import Foundation
import StarlingWire

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode a bitchat packet from hex and show every field, nested payloads included.",
        discussion: """
        The packet comes from the argument, from --file, or from standard input. \
        Whitespace, colons and a leading 0x in the hex are ignored. Malformed input \
        exits with status 1 and names the field and byte offset that are wrong; input \
        that is not hexadecimal exits with status 2.

        Examples:
          starling inspect 0102070000019aaaac2600000005a1b2c3d4e5f6071868656c6c6f
          xxd -p capture.bin | starling inspect --json
          starling inspect --noise-plaintext 0100046d2d303101026869
        """
    )

    @Argument(help: "The packet as hexadecimal. Omit it to read --file or standard input.")
    var hex: String?

    @Option(name: .shortAndLong, help: "Read the hex (or, with --binary, raw bytes) from this file.")
    var file: String?

    @Flag(help: "The input is raw bytes, not hex.")
    var binary = false

    @Flag(help: "The input is the plaintext inside a Noise transport frame (private message, receipts, private file).")
    var noisePlaintext = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let bytes: [UInt8]
        do {
            bytes = try readInput()
        } catch let error as WireError {
            StandardError.write(Data("starling inspect: input is not hexadecimal: \(error)\n".utf8))
            throw ExitCode(2)
        }
        // Every layer that decodes is shown; a malformed inner layer is marked,
        // and the exit status still says the packet is malformed.
        let dissection: Dissection
        if noisePlaintext {
            do { dissection = Dissection(field: try Dissector.noisePlaintext(bytes), error: nil) } catch {
                dissection = Dissection(field: nil, error: error)
            }
        } else {
            dissection = Dissector.dissect(bytes)
        }
        if let field = dissection.field {
            print(json ? FieldRenderer.json(field) : FieldRenderer.text(field), terminator: json ? "\n" : "")
        }
        if let error = dissection.error {
            StandardError.write(Data("starling inspect: malformed \(noisePlaintext ? "Noise payload" : "packet"): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    func readInput() throws -> [UInt8] {
        if let hex {
            return try [UInt8](hex: hex)
        }
        let raw: Data
        if let file {
            guard let d = FileManager.default.contents(atPath: file) else {
                throw RuntimeFailure("cannot read \(file)")
            }
            raw = d
        } else {
            // At a terminal, a person waiting on nothing is told what this waits for.
            if isatty(STDIN_FILENO) == 1 {
                StandardError.write(Data("starling inspect: reading a packet as \(binary ? "bytes" : "hex") from standard input; end with Ctrl-D (or give HEX, or --file FILE)\n".utf8))
            }
            raw = FileHandle.standardInput.readDataToEndOfFile()
        }
        if binary { return [UInt8](raw) }
        return try [UInt8](hex: String(decoding: raw, as: UTF8.self))
    }
}
