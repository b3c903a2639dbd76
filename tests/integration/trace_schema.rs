//! `schemas/trace-event.schema.json` and the trace event type say the same thing: every field the
//! type reads is a property of the schema and the other way round (nested objects included), and
//! every closed set of names (exit reasons, capture modes, hashes, event types) is the same set.
//! The type's own names are taken from its `Deserialize` implementation, so a field added to the
//! type without the schema (or to the schema without the type) fails here. Each event type's
//! fields (from `trace::fields_by_event_type`, derived from the `EventKind` variants) are
//! properties of the schema, every property is a field of some event type, and the fields the
//! schema requires of an event type are fields that type has.

use std::collections::BTreeSet;

use serde::de::{self, Deserialize, Visitor};
use serde_json::Value;

use looptrace::model::Usage;
use looptrace::run::ExitReason;
use looptrace::trace::{
    Capture, ENVELOPE_FIELDS, Event, EventKind, HashAlgorithm, ModelRef, ReplayOf, RunSource,
    Score, ToolRef, fields_by_event_type,
};

use super::support::schema;

/// A deserializer that reads nothing: it records the field names (of a struct) or variant names
/// (of an enum) that a type's derived `Deserialize` asks for, then stops.
struct Names(Vec<&'static str>);

impl<'de> de::Deserializer<'de> for &mut Names {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("names only"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.extend(fields);
        Err(de::Error::custom("names only"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.extend(variants);
        Err(de::Error::custom("names only"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The names `T`'s `Deserialize` knows.
fn names_of<T: for<'de> Deserialize<'de>>() -> BTreeSet<String> {
    let mut names = Names(Vec::new());
    let _ = T::deserialize(&mut names);
    assert!(
        !names.0.is_empty(),
        "{} asks for no names",
        std::any::type_name::<T>()
    );
    names.0.iter().map(|name| (*name).to_owned()).collect()
}

/// The property names of a schema object (`items` for an array of objects).
fn properties(object: &Value) -> BTreeSet<String> {
    let object = object.get("items").unwrap_or(object);
    object["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no properties in {object}"))
        .keys()
        .cloned()
        .collect()
}

fn strings(values: &Value) -> BTreeSet<String> {
    values
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {values}"))
        .iter()
        .map(|value| value.as_str().expect("a string").to_owned())
        .collect()
}

#[test]
fn the_schema_declares_exactly_the_fields_of_the_event_type() {
    let schema = schema("trace-event.schema.json");
    assert_eq!(properties(&schema), names_of::<Event>());
    let nested = [
        ("replay_of", names_of::<ReplayOf>()),
        ("source", names_of::<RunSource>()),
        ("model", names_of::<ModelRef>()),
        ("tools", names_of::<ToolRef>()),
        ("scores", names_of::<Score>()),
        ("usage", names_of::<Usage>()),
    ];
    for (field, fields) in nested {
        assert_eq!(
            properties(&schema["properties"][field]),
            fields,
            "`{field}`"
        );
    }
}

#[test]
fn the_schema_names_the_same_closed_sets_as_the_types() {
    let schema = schema("trace-event.schema.json");
    let properties = &schema["properties"];
    let exit_reasons: BTreeSet<String> = ExitReason::ALL
        .iter()
        .map(|reason| reason.as_str().to_owned())
        .collect();
    assert_eq!(strings(&properties["exit_reason"]["enum"]), exit_reasons);
    assert_eq!(exit_reasons, names_of::<ExitReason>());
    assert_eq!(
        strings(&properties["capture"]["enum"]),
        names_of::<Capture>()
    );
    assert_eq!(
        strings(&properties["hash"]["enum"]),
        names_of::<HashAlgorithm>()
    );
    assert_eq!(
        strings(&schema["required"]),
        ["run_id", "step", "event_type"]
            .map(str::to_owned)
            .into_iter()
            .collect()
    );
}

#[test]
fn every_event_type_the_schema_constrains_is_one_the_type_knows() {
    let schema = schema("trace-event.schema.json");
    let mut constrained = BTreeSet::new();
    for rule in schema["allOf"].as_array().expect("allOf") {
        let name = rule["if"]["properties"]["event_type"]["const"]
            .as_str()
            .expect("a rule on one event type");
        let line = serde_json::json!({"run_id": "r", "step": 0, "event_type": name});
        let kind = serde_json::from_value::<Event>(line).map(|event| event.kind);
        assert!(
            !matches!(kind, Ok(EventKind::Unknown { .. })),
            "the schema constrains `{name}`, which the type does not know"
        );
        constrained.insert(name.to_owned());
        if name == "run_finished" {
            assert_eq!(rule["then"]["required"], serde_json::json!(["exit_reason"]));
        }
    }
    assert!(constrained.contains("run_finished"), "{constrained:?}");
}

#[test]
fn every_variant_of_the_event_type_has_its_fields_in_the_schema_and_back() {
    let schema = schema("trace-event.schema.json");
    let declared = properties(&schema);
    let by_type = fields_by_event_type();
    let mut union: BTreeSet<String> = ENVELOPE_FIELDS.map(str::to_owned).into_iter().collect();
    for (event_type, fields) in &by_type {
        for field in fields {
            assert!(
                declared.contains(field),
                "`{event_type}` has `{field}`, which the schema does not declare"
            );
            union.insert(field.clone());
        }
    }
    assert_eq!(
        declared, union,
        "the schema declares fields no event type has, or the other way round"
    );
    for rule in schema["allOf"].as_array().expect("allOf") {
        let name = rule["if"]["properties"]["event_type"]["const"]
            .as_str()
            .expect("a rule on one event type");
        let (_, fields) = by_type
            .iter()
            .find(|(event_type, _)| event_type == name)
            .unwrap_or_else(|| panic!("no variant for `{name}`"));
        for required in rule["then"]["required"].as_array().into_iter().flatten() {
            let required = required.as_str().expect("a field name");
            assert!(
                fields.iter().any(|field| field == required),
                "the schema requires `{required}` of `{name}`, which that variant does not have"
            );
        }
    }
    // Every known variant of the type is listed (the unknown kind aside).
    assert_eq!(by_type.len(), 9, "{by_type:?}");
}
