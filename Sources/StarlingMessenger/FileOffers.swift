import StarlingNode

/// Choosing among the offers of large files that wait for an answer, as every
/// face does it: `/accept 5f0c` in the chat, a script's name, the newest.
public enum FileOfferChoice {
    /// The offer `named`: a transfer ID or its first digits, or the file's name;
    /// nil names the newest. Throws `notFound` (in words, with what waits) or
    /// `conflict` (several match: more of the ID is needed).
    public static func choose(_ named: String?, among offers: [MeshNode.FileOffer]) throws(MessengerClientError) -> MeshNode.FileOffer {
        guard !offers.isEmpty else { throw MessengerClientError(.notFound, "no file offer waits for an answer") }
        guard let named, !named.isEmpty else { return offers[offers.count - 1] }
        let id = named.lowercased()
        if let exact = offers.last(where: { $0.transferID == id }) { return exact }
        let matching = offers.filter { $0.transferID.hasPrefix(id) || $0.name == named }
        guard let offer = matching.first else {
            throw MessengerClientError(.notFound, "no offer \(named) (waiting: \(offers.map { "\($0.transferID.prefix(8)) \($0.name)" }.joined(separator: ", ")))")
        }
        guard matching.count == 1 else {
            throw MessengerClientError(.conflict, "\(matching.count) offers match \(named): give more of the ID (\(matching.map { String($0.transferID.prefix(8)) }.joined(separator: ", ")))")
        }
        return offer
    }
}

extension MessengerClient {
    /// Accepts or declines the offer `named` (see ``FileOfferChoice/choose(_:among:)``); the offer answered.
    public func answerFileOffer(named: String?, accept: Bool) async throws -> MeshNode.FileOffer {
        let offer = try FileOfferChoice.choose(named, among: try await fileOffers())
        try await answerFileOffer(offer.transferID, accept: accept)
        return offer
    }
}
