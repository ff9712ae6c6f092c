import ArgumentParser

@main
struct Starling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "starling",
        abstract: "Offline, end-to-end encrypted mesh chat over Bluetooth LE and the local network.",
        discussion: """
        Starling speaks the bitchat protocol, so it can chat with and relay for the \
        bitchat phone apps. Each subcommand has its own --help.
        """,
        version: StarlingVersion.string,
        subcommands: [Chat.self, Id.self, Inspect.self, Listen.self, Relay.self, Send.self, Sim.self, Status.self, WiFi.self]
    )
}

enum StarlingVersion {
    static let string = "0.1.0"
}
