import Testing
@testable import WebSocket

@Suite struct DeflateNegotiationTests {
    @Test func plainOffer() {
        let accepted = DeflateParameters.negotiate(offers: ["permessage-deflate"])
        #expect(accepted == DeflateParameters())
        #expect(accepted?.responseHeaderValue == "permessage-deflate; server_no_context_takeover")
    }

    @Test func noOfferNoDeflate() {
        #expect(DeflateParameters.negotiate(offers: []) == nil)
        #expect(DeflateParameters.negotiate(offers: ["x-webkit-deflate-frame"]) == nil)
    }

    @Test func serverNoContextTakeover() {
        let accepted = DeflateParameters.negotiate(offers: ["permessage-deflate; server_no_context_takeover"])
        #expect(accepted?.serverNoContextTakeover == true)
        #expect(accepted?.clientNoContextTakeover == false)
        #expect(accepted?.responseHeaderValue == "permessage-deflate; server_no_context_takeover")
    }

    @Test func clientNoContextTakeover() {
        let accepted = DeflateParameters.negotiate(offers: ["permessage-deflate; client_no_context_takeover"])
        #expect(accepted?.clientNoContextTakeover == true)
        #expect(accepted?.responseHeaderValue == "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
    }

    @Test(arguments: 9...15)
    func serverMaxWindowBitsAccepted(bits: Int) {
        let accepted = DeflateParameters.negotiate(offers: ["permessage-deflate; server_max_window_bits=\(bits)"])
        #expect(accepted?.serverMaxWindowBits == bits)
        let expected = "permessage-deflate; server_no_context_takeover" + (bits == 15 ? "" : "; server_max_window_bits=\(bits)")
        #expect(accepted?.responseHeaderValue == expected)
    }

    @Test func serverMaxWindowBits8IsDeclined() {
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; server_max_window_bits=8"]) == nil)
    }

    @Test(arguments: [
        "server_max_window_bits", "server_max_window_bits=", "server_max_window_bits=7", "server_max_window_bits=16",
        "server_max_window_bits=0", "server_max_window_bits=010", "server_max_window_bits=abc", "server_max_window_bits=-9",
        "server_max_window_bits=+9", "server_max_window_bits=1 0", "server_max_window_bits=100",
        "client_max_window_bits=7", "client_max_window_bits=16", "client_max_window_bits=", "client_max_window_bits=09",
        "server_no_context_takeover=1", "client_no_context_takeover=true",
    ])
    func invalidValuesAreDeclined(parameter: String) {
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; \(parameter)"]) == nil)
    }

    @Test func clientMaxWindowBits() {
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; client_max_window_bits"])?.clientMaxWindowBits == 15)
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; client_max_window_bits=10"])?.clientMaxWindowBits == 10)
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; client_max_window_bits=8"])?.clientMaxWindowBits == 8)
    }

    @Test func quotedValue() {
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; server_max_window_bits=\"10\""])?.serverMaxWindowBits == 10)
    }

    @Test(arguments: [
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; client_no_context_takeover; client_no_context_takeover",
        "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10",
        "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
    ])
    func duplicateParametersAreDeclined(offer: String) {
        #expect(DeflateParameters.negotiate(offers: [offer]) == nil)
    }

    @Test func unknownParameterIsDeclined() {
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; mystery"]) == nil)
        #expect(DeflateParameters.negotiate(offers: ["permessage-deflate; mystery=1"]) == nil)
    }

    @Test func fallsBackToTheNextOfferInTheList() {
        let offers = "permessage-deflate; server_max_window_bits=8, permessage-deflate; client_no_context_takeover"
        let accepted = DeflateParameters.negotiate(offers: [offers])
        #expect(accepted == DeflateParameters(clientNoContextTakeover: true))
    }

    @Test func fallsBackAcrossHeaderLinesAndSkipsOtherExtensions() {
        let accepted = DeflateParameters.negotiate(offers: [
            "x-webkit-deflate-frame, permessage-deflate; mystery", "permessage-deflate; server_max_window_bits=12",
        ])
        #expect(accepted?.serverMaxWindowBits == 12)
    }

    @Test func firstAcceptableOfferWins() {
        let accepted = DeflateParameters.negotiate(offers: ["permessage-deflate; server_max_window_bits=10, permessage-deflate"])
        #expect(accepted?.serverMaxWindowBits == 10)
    }

    @Test func whitespaceAroundParametersIsTolerated() {
        let accepted = DeflateParameters.negotiate(offers: ["  permessage-deflate ;client_max_window_bits ;\tserver_max_window_bits=11 "])
        #expect(accepted?.serverMaxWindowBits == 11)
    }

    @Test func fullResponseHeader() {
        let parameters = DeflateParameters(clientNoContextTakeover: true, serverMaxWindowBits: 10)
        #expect(parameters.responseHeaderValue
            == "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10")
    }

    @Test func clientReadsTheServerAnswer() {
        #expect(DeflateParameters.clientAccept(response: ["permessage-deflate; server_no_context_takeover"])
            == DeflateParameters(serverNoContextTakeover: true))
        #expect(DeflateParameters.clientAccept(response: ["permessage-deflate"]) == DeflateParameters(serverNoContextTakeover: false))
        let full = DeflateParameters.clientAccept(response: [
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=12",
        ])
        #expect(full == DeflateParameters(serverNoContextTakeover: false, clientNoContextTakeover: true,
                                          serverMaxWindowBits: 10, clientMaxWindowBits: 12))
    }

    @Test(arguments: [
        "permessage-deflate; client_max_window_bits=8", "permessage-deflate; client_max_window_bits",
        "permessage-deflate; mystery", "x-other", "permessage-deflate, permessage-deflate",
        "permessage-deflate; server_max_window_bits=16",
    ])
    func clientRejectsBadAnswers(answer: String) {
        #expect(DeflateParameters.clientAccept(response: [answer]) == nil)
    }

    @Test func serverAnswerIsAcceptedByAClient() {
        for offer in ["permessage-deflate", "permessage-deflate; client_no_context_takeover; server_max_window_bits=9",
                      DeflateParameters.clientOfferHeaderValue] {
            guard let accepted = DeflateParameters.negotiate(offers: [offer]) else {
                Issue.record("offer \(offer) declined")
                continue
            }
            let seenByClient = DeflateParameters.clientAccept(response: [accepted.responseHeaderValue])
            #expect(seenByClient?.serverNoContextTakeover == accepted.serverNoContextTakeover)
            #expect(seenByClient?.clientNoContextTakeover == accepted.clientNoContextTakeover)
            #expect(seenByClient?.serverMaxWindowBits == accepted.serverMaxWindowBits)
        }
    }
}
