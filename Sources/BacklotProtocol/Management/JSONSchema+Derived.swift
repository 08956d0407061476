import Foundation

extension JSONSchema {
    /// The schema of `type` as its `Codable` conformance reads and writes it: one property per
    /// member it decodes, with the kind of its Swift type (a ``WireValue``'s own schema, an array of
    /// its element's, a nested object's, a reference to a type in `named`), refined by
    /// ``WireObject/memberSchemas``. A member is required when the type reads it with `decode`
    /// or writes it even when nil (``NullWhenAbsent``), and nullable when it is optional.
    ///
    /// - Throws: ``SchemaDerivationError`` when the type's decoder does something no schema is
    ///   read from, or when its member schemas name a member it does not have or give one another kind.
    ///
    /// ```swift
    /// let app = try JSONSchema.derived(from: API.App.self, named: [:])
    /// ```
    public static func derived<T: WireObject & Encodable>(
        from type: T.Type, named: [ObjectIdentifier: String] = [:]
    ) throws -> JSONSchema {
        do {
            let (probe, _) = try SchemaReader.read(type, in: SchemaReader.Context(named: named), root: true)
            return try build(probe, in: "\(T.self)")
        } catch let error as SchemaDerivationError {
            throw error
        } catch let error as SchemaReader.Unreadable {
            throw SchemaDerivationError(type: "\(T.self)", problem: error.description)
        } catch {
            throw SchemaDerivationError(type: "\(T.self)", problem: "its decoder refused the values read: \(error)")
        }
    }

    static func build(_ probe: SchemaReader.Probe, in place: String) throws -> JSONSchema {
        let schema: JSONSchema
        switch probe.shape {
        case .unknown:
            throw SchemaDerivationError(type: place, problem: "its decoder read nothing")
        case .scalar(let s):
            schema = s
        case .array(let element):
            schema = .array(try build(element, in: place + "[]"))
        case .object(let members):
            schema = try object(members, of: probe.wireObject, writing: probe.written, in: place)
        }
        return probe.nullable && !schema.isNullable ? schema.addingNull : schema
    }

    static func object(
        _ members: [SchemaReader.Probe.Member], of wire: (any WireObject.Type)?, writing written: Set<String>,
        in place: String
    ) throws -> JSONSchema {
        let given = wire?.memberSchemas ?? [:]
        let names = Set(members.map(\.name))
        if let unknown = given.keys.sorted().first(where: { !names.contains($0) }) {
            throw SchemaDerivationError(
                type: place, problem: "its member schemas name \"\(unknown)\", which it has not")
        }
        var properties: [String: JSONSchema] = [:]
        var required: [String] = []
        for m in members {
            let base = try build(m.probe, in: place + "." + m.name)
            var schema = base
            if let refined = given[m.name] {
                let kind = base.type.filter { $0 != "null" }
                let refinedKind = refined.type.filter { $0 != "null" }
                guard kind.isEmpty || refinedKind.isEmpty || kind == refinedKind else {
                    throw SchemaDerivationError(
                        type: place,
                        problem: "its member schema for \"\(m.name)\" is \(refinedKind), the member is \(kind)")
                }
                schema = refined
            }
            if (m.optional || base.isNullable) && !schema.isNullable { schema = schema.addingNull }
            properties[m.name] = schema
            if !m.optional || written.contains(m.name) {
                required.append(m.name)
            }
        }
        return .object(properties, required: required, description: wire?.objectDescription)
    }

    /// Whether null is one of the values this schema allows.
    var isNullable: Bool { type.contains("null") || (anyOf?.contains { $0.type == ["null"] } ?? false) }

    /// This schema, null allowed too: `"type": [kind, "null"]` for a plain scalar, `anyOf` otherwise
    /// (an enumeration, an object, an array or a reference).
    var addingNull: JSONSchema {
        let scalar =
            ref == nil && anyOf == nil && enumeration == nil && type.count == 1
            && ["string", "integer", "number", "boolean"].contains(type[0])
        guard scalar else { return orNull }
        return JSONSchema(
            type: type + ["null"], format: format, pattern: pattern, minimum: minimum, maximum: maximum,
            minLength: minLength, maxLength: maxLength, description: description)
    }
}

/// A type whose schema cannot be read from its `Codable` conformance, or whose member schemas do
/// not fit it: a programming error, reported by the tests (``APISchemas/schemas()``).
public struct SchemaDerivationError: Error, CustomStringConvertible, Sendable {
    public let type: String
    public let problem: String
    public var description: String { "\(type): \(problem)" }
}
