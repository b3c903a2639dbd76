//! A task's JSON as the schema check reads it: one flat list of items borrowed from the task's
//! text, built in one pass with no `serde_json::Value` (no maps, no strings copied but the rare
//! escaped one). `jsonschema` validates any representation behind its `Json` trait; this is that
//! representation, so the one schema checks every task without a value built per task. A key
//! given twice makes no document: the caller then reads the text the way that says where. A
//! document that passes is read into its typed struct from the same items (`de`).

mod de;

use std::borrow::Cow;
use std::fmt;

use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// One item of a document, in text order: a container is followed by its contents, an
/// object's members each by their name then their value.
#[derive(Debug, PartialEq)]
enum Item<'t> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'t, str>),
    /// An array of `len` elements; its last item is just before `end`.
    Array {
        len: usize,
        end: usize,
    },
    /// An object of `len` members; its last item is just before `end`.
    Object {
        len: usize,
        end: usize,
    },
    /// A member's name; its value is the next item.
    Name(Cow<'t, str>),
}

/// A JSON document borrowed from its text.
#[derive(Debug, Default)]
pub struct FlatDocument<'t> {
    items: Vec<Item<'t>>,
}

impl<'t> FlatDocument<'t> {
    /// The document `text` holds, or `None` when it is not JSON or repeats a key in an object.
    pub fn parse(text: &'t str) -> Option<FlatDocument<'t>> {
        let mut document = FlatDocument {
            // About one item per dozen bytes of a typical task: one allocation for most.
            items: Vec::with_capacity(text.len() / 8 + 4),
        };
        let mut de = serde_json::Deserializer::from_str(text);
        Build(&mut document.items).deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(document)
    }

    /// The document's root, for the schema.
    pub fn root(&self) -> FlatNode<'_> {
        FlatNode {
            items: &self.items,
            at: 0,
        }
    }
}

/// The items of several documents one after another (a batch of a suite's tasks), kept from
/// batch to batch so that building a document allocates nothing once the buffer has grown.
#[derive(Debug, Default)]
pub struct FlatItems<'t> {
    items: Vec<Item<'t>>,
}

impl<'t> FlatItems<'t> {
    /// Forgets every document, keeping the buffer.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Reads the value at the start of `text` (after any whitespace) as a document: its root's
    /// place, for [`FlatItems::node`], and the length of text through the value's end. `None`
    /// when what starts there is not JSON or repeats a key in an object; nothing is kept then.
    pub fn push_value(&mut self, text: &'t str) -> Option<(usize, usize)> {
        let root = self.items.len();
        let mut de = serde_json::Deserializer::from_str(text);
        match Build(&mut self.items).deserialize(&mut de) {
            Ok(()) => Some((root, de.into_iter::<serde::de::IgnoredAny>().byte_offset())),
            Err(_) => {
                self.items.truncate(root);
                None
            }
        }
    }

    /// The document whose root is at `root`.
    pub fn node(&self, root: usize) -> FlatNode<'_> {
        FlatNode {
            items: &self.items,
            at: root,
        }
    }
}

/// Appends one value's items.
struct Build<'v, 't>(&'v mut Vec<Item<'t>>);

/// The message of the error that stops a build at a repeated key (never shown).
const REPEATED: &str = "repeated key";

impl<'t> DeserializeSeed<'t> for Build<'_, 't> {
    type Value = ();

    fn deserialize<D: Deserializer<'t>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'t> Visitor<'t> for Build<'_, 't> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push(Item::Bool(v));
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0.push(Item::Number(v.into()));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0.push(Item::Number(v.into()));
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        // As `serde_json::Value` reads it.
        self.0
            .push(Number::from_f64(v).map_or(Item::Null, Item::Number));
        Ok(())
    }

    fn visit_borrowed_str<E>(self, v: &'t str) -> Result<(), E> {
        self.0.push(Item::String(Cow::Borrowed(v)));
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.push(Item::String(Cow::Owned(v.to_owned())));
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push(Item::Null);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'t>>(self, mut seq: A) -> Result<(), A::Error> {
        let at = self.0.len();
        self.0.push(Item::Null);
        let mut len = 0;
        while seq.next_element_seed(Build(&mut *self.0))?.is_some() {
            len += 1;
        }
        let end = self.0.len();
        self.0[at] = Item::Array { len, end };
        Ok(())
    }

    fn visit_map<A: MapAccess<'t>>(self, mut map: A) -> Result<(), A::Error> {
        let at = self.0.len();
        self.0.push(Item::Null);
        let mut len = 0;
        while let Some(name) = map.next_key_seed(NameSeed)? {
            if members(self.0, at).any(|(earlier, _)| *earlier == *name) {
                return Err(serde::de::Error::custom(REPEATED));
            }
            self.0.push(Item::Name(name));
            map.next_value_seed(Build(&mut *self.0))?;
            len += 1;
        }
        let end = self.0.len();
        self.0[at] = Item::Object { len, end };
        Ok(())
    }
}

/// A member's name, borrowed unless it holds an escape.
struct NameSeed;

impl<'t> DeserializeSeed<'t> for NameSeed {
    type Value = Cow<'t, str>;

    fn deserialize<D: Deserializer<'t>>(self, deserializer: D) -> Result<Cow<'t, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'t> Visitor<'t> for NameSeed {
    type Value = Cow<'t, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, v: &'t str) -> Result<Cow<'t, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'t, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// Where the item after the value at `at` is.
fn after(items: &[Item<'_>], at: usize) -> usize {
    match items[at] {
        Item::Array { end, .. } | Item::Object { end, .. } => end,
        _ => at + 1,
    }
}

/// The members of the object at `object`; of one still being built, those read so far.
fn members<'a>(items: &'a [Item<'a>], object: usize) -> Members<'a> {
    let end = match items[object] {
        Item::Object { end, .. } => end,
        _ => items.len(),
    };
    Members {
        items,
        at: object + 1,
        end,
    }
}

/// An object's members in order: each name, and its value.
pub struct Members<'a> {
    items: &'a [Item<'a>],
    at: usize,
    end: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, FlatNode<'a>);

    fn next(&mut self) -> Option<(&'a str, FlatNode<'a>)> {
        if self.at >= self.end {
            return None;
        }
        let Item::Name(name) = &self.items[self.at] else {
            return None;
        };
        let value = self.at + 1;
        self.at = after(self.items, value);
        let node = FlatNode {
            items: self.items,
            at: value,
        };
        Some((name.as_ref(), node))
    }
}

/// The representation, for `jsonschema`.
pub struct FlatJson;

impl Json for FlatJson {
    type Node<'a> = FlatNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = NameBuffer;

    // A look-up walks the members: a pass over them never costs more than look-ups do (objects
    // of a suite have a few dozen keys at most).
    const KEYS_PER_LOOKUP: usize = 64;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(
        buffer: &mut NameBuffer,
        string: &str,
        f: impl FnOnce(FlatNode<'_>) -> T,
    ) -> T {
        buffer.0.clear();
        buffer.0.push(Item::String(Cow::Owned(string.to_owned())));
        f(FlatNode {
            items: &buffer.0,
            at: 0,
        })
    }
}

/// Where a member's name is held while the schema checks it as a string (`propertyNames`).
#[derive(Default)]
pub struct NameBuffer(Vec<Item<'static>>);

/// One value of a [`FlatDocument`].
#[derive(Clone, Copy)]
pub struct FlatNode<'a> {
    items: &'a [Item<'a>],
    at: usize,
}

impl<'a> FlatNode<'a> {
    fn item(&self) -> &'a Item<'a> {
        &self.items[self.at]
    }

    /// The member `name` of this object.
    pub fn get(&self, name: &str) -> Option<FlatNode<'a>> {
        let Item::Object { .. } = self.item() else {
            return None;
        };
        members(self.items, self.at)
            .find(|(earlier, _)| *earlier == name)
            .map(|(_, node)| node)
    }
}

impl<'a> Node<'a, FlatJson> for FlatNode<'a> {
    type Object = FlatObject<'a>;
    type Array = FlatArray<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<FlatObject<'a>> {
        match *self.item() {
            Item::Object { len, .. } => Some(FlatObject { node: *self, len }),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<FlatArray<'a>> {
        match *self.item() {
            Item::Array { len, .. } => Some(FlatArray { node: *self, len }),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self.item() {
            Item::String(string) => Some(Cow::Borrowed(string.as_ref())),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.item() {
            Item::Number(number) => Some(number),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.item() {
            Item::Bool(boolean) => Some(*boolean),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.item(), Item::Null)
    }

    fn json_type(&self) -> JsonType {
        match self.item() {
            Item::Null => JsonType::Null,
            Item::Bool(_) => JsonType::Boolean,
            Item::Number(_) => JsonType::Number,
            Item::String(_) | Item::Name(_) => JsonType::String,
            Item::Array { .. } => JsonType::Array,
            Item::Object { .. } => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        // `enum` and `const` of strings, without building a value.
        match (self.item(), expected) {
            (Item::String(string), Value::String(expected)) => string == expected,
            (Item::String(_), _) => false,
            _ => jsonschema::json::cmp::equal(&self.to_value(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(value(self.items, self.at))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(std::ptr::from_ref(self.item()) as usize))
    }
}

/// The item at `at` as a `serde_json::Value` (for errors and the rare keyword that needs one).
fn value(items: &[Item<'_>], at: usize) -> Value {
    match &items[at] {
        Item::Null => Value::Null,
        Item::Bool(boolean) => Value::Bool(*boolean),
        Item::Number(number) => Value::Number(number.clone()),
        Item::String(string) | Item::Name(string) => Value::String(string.clone().into_owned()),
        Item::Array { len, .. } => {
            let mut list = Vec::with_capacity(*len);
            let mut element = at + 1;
            for _ in 0..*len {
                list.push(value(items, element));
                element = after(items, element);
            }
            Value::Array(list)
        }
        Item::Object { .. } => Value::Object(
            members(items, at)
                .map(|(name, node)| (name.to_owned(), value(items, node.at)))
                .collect(),
        ),
    }
}

/// An object of a [`FlatDocument`].
pub struct FlatObject<'a> {
    node: FlatNode<'a>,
    len: usize,
}

impl<'a> Object<'a, FlatJson> for FlatObject<'a> {
    type Node = FlatNode<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, key: &Box<str>) -> Option<FlatNode<'a>> {
        self.node.get(key)
    }

    fn members(&self) -> Members<'a> {
        members(self.node.items, self.node.at)
    }
}

/// An array of a [`FlatDocument`].
pub struct FlatArray<'a> {
    node: FlatNode<'a>,
    len: usize,
}

impl<'a> Array<'a, FlatJson> for FlatArray<'a> {
    type Node = FlatNode<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn elements(&self) -> Elements<'a> {
        Elements {
            node: self.node,
            next: self.node.at + 1,
            left: self.len,
        }
    }
}

/// An array's elements in order.
pub struct Elements<'a> {
    node: FlatNode<'a>,
    next: usize,
    left: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = FlatNode<'a>;

    fn next(&mut self) -> Option<FlatNode<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let at = self.next;
        self.next = after(self.node.items, at);
        Some(FlatNode { at, ..self.node })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_back_as_the_value_serde_json_reads() {
        let text = r#"{"a": [1, -2, 3.5, 18446744073709551615, "s\n", null, true, {}], "b\u00e9": {"c": []}, "e": "é"}"#;
        let document = FlatDocument::parse(text).unwrap();
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(*document.root().to_value(), expected);
        assert_eq!(document.root().get("e").unwrap().as_string().unwrap(), "é");
        assert!(document.root().get("z").is_none());
        // Unescaped strings are borrowed from the text.
        let borrowed = |item: &Item<'_>| matches!(item, Item::String(Cow::Borrowed("é")));
        assert!(document.items.iter().any(borrowed));
        assert!(
            document
                .items
                .contains(&Item::String(Cow::Owned("s\n".to_owned())))
        );
    }

    #[test]
    fn a_repeated_key_or_bad_json_makes_no_document() {
        assert!(FlatDocument::parse(r#"{"a": {"b": 1, "c": [2], "b": 3}}"#).is_none());
        assert!(FlatDocument::parse(r#"{"a": 1, "a": 1}"#).is_none());
        assert!(FlatDocument::parse(r#"{"a": 1} x"#).is_none());
        assert!(FlatDocument::parse(r#"{"a": {}, "a": 1}"#).is_none());
        let nested = FlatDocument::parse(r#"{"a": {"b": 1}, "b": {}, "c": 2}"#).unwrap();
        let b = nested.root().get("b").unwrap();
        assert_eq!(*b.to_value(), serde_json::json!({}));
        assert!(b.get("c").is_none());
        assert_eq!(*nested.root().get("c").unwrap().to_value(), 2);
    }
}
