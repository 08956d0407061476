import BacklotBasics
import Foundation
import Testing

@testable import BacklotAppClips

struct AppClipLinkTests {
    @Test(arguments: [
        ("table", "12"),
        ("name", "Café Zoë ☕️"),
        ("q", "a&b=c+d e"),
        ("empty", ""),
        ("percent", "100%"),
    ])
    func linksRoundTripWithTheirParametersInOrder(name: String, value: String) throws {
        let link = try AppClipLink(
            bundleIdentifier: "com.example.Game.Clip",
            parameters: [.init(name: "first", value: "1"), .init(name: name, value: value)])
        let parsed = try AppClipLink(parsing: link.string)
        #expect(parsed == link)
        #expect(parsed.parameters.map(\.name) == ["first", name])
        // What NSURLComponents.queryItems gives the clip for the same text.
        let items = URLComponents(string: link.string)?.queryItems ?? []
        #expect(items.map(\.name) == ["p", "first", name])
        #expect(items.map { $0.value ?? "" } == ["com.example.Game.Clip", "1", value])
    }

    @Test func theTextIsExact() throws {
        let link = try AppClipLink(bundleIdentifier: "com.example.Clip", parameters: [.init(name: "s", value: "a b+c")])
        #expect(link.string == "https://appclip.apple.com/id?p=com.example.Clip&s=a%20b%2Bc")
        #expect(
            try AppClipLink(parsing: "https://APPCLIP.apple.com/id?p=com.example.Clip&x=%F0%9F%98%80").parameters == [
                .init(name: "x", value: "😀")
            ])
    }

    @Test(arguments: [
        ("http://appclip.apple.com/id?p=com.example.Clip", "starts with https://"),
        ("https://appclip.example.com/id?p=com.example.Clip", "not appclip.apple.com"),
        ("https://appclip.apple.com/app?p=com.example.Clip", "not /id"),
        ("https://appclip.apple.com/id", "no query"),
        ("https://appclip.apple.com/id?x=1", "no p=BUNDLE_ID"),
        ("https://appclip.apple.com/id?p=a.b&p=c.d", "2 p parameters"),
        ("https://appclip.apple.com/id?p=clip", "reverse-DNS"),
        ("https://appclip.apple.com/id?p=com.exa%20mple", "contains ' '"),
        ("https://appclip.apple.com/id?p=com.example.Clip&x=%FF", "not valid percent-encoded UTF-8"),
    ])
    func badLinksAreRefusedSayingWhy(url: String, phrase: String) {
        #expect { try AppClipLink(parsing: url) } throws: {
            ($0 as? BacklotError)?.description.contains(phrase) == true
        }
    }

    @Test func demoLinksTakeNoParameters() throws {
        #expect(try AppClipLink(parsing: "https://appclip.apple.com/id?p=com.example.Clip", demo: true).isDemo)
        #expect {
            try AppClipLink(parsing: "https://appclip.apple.com/id?p=com.example.Clip&a=1", demo: true)
        } throws: {
            ($0 as? BacklotError)?.message.contains("demo") == true
        }
    }
}

struct AppClipExperienceTests {
    let experiences = try! AppClipExperiences([
        .init(id: "site", urlPrefix: "https://example.com/"),
        .init(id: "shop", urlPrefix: "https://example.com/shop"),
        .init(id: "shop-paris", urlPrefix: "https://example.com/shop/paris"),
        .init(id: "table-5", urlPrefix: "https://example.com/shop/paris?table=5"),
        .init(id: "shop-again", urlPrefix: "https://example.com/shop/"),
    ])

    @Test(arguments: [
        ("https://example.com/shop/paris/menu", "shop-paris"),
        ("https://example.com/shop/paris?table=5&lang=fr", "table-5"),
        ("https://example.com/shop/london", "shop"),
        ("https://example.com/shopping", "site"),  // near miss: not under /shop
        ("https://EXAMPLE.com/shop/paris", "shop-paris"),  // host case does not matter
        ("https://example.com/", "site"),
    ])
    func theLongestMatchingPrefixWins(url: String, id: String) {
        #expect(experiences.match(url)?.experience.id == id)
    }

    @Test func nearMissesAndTies() {
        #expect(experiences.match("https://example.org/shop") == nil)
        #expect(experiences.match("http://example.com/shop") == nil)
        // "/shop" and "/shop/" are equally specific: the first registered wins, the tie is reported.
        let tie = experiences.match("https://example.com/shop/london")
        #expect(tie?.experience.id == "shop" && tie?.tiedWith.map(\.id) == ["shop-again"])
    }
}
