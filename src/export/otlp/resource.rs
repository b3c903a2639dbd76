//! The resource every exported run is sent under: `service.name` (the run's agent unless
//! `OTEL_SERVICE_NAME` names another) and the attributes of `OTEL_RESOURCE_ATTRIBUTES`, read as
//! the OpenTelemetry SDK environment specification defines them.

/// Resource settings from the standard variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceConfig {
    /// `OTEL_SERVICE_NAME`, else `service.name` from `OTEL_RESOURCE_ATTRIBUTES`; `None` keeps
    /// each run's agent.
    pub service_name: Option<String>,
    /// The other attributes of `OTEL_RESOURCE_ATTRIBUTES`, in their order.
    pub attributes: Vec<(String, String)>,
}

/// A malformed resource variable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("failed to read {variable}: {problem}")]
pub struct ResourceError {
    /// The variable.
    pub variable: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

impl ResourceConfig {
    /// Reads `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` through `var`.
    pub fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<Self, ResourceError> {
        let mut config = ResourceConfig::default();
        if let Some(list) = var("OTEL_RESOURCE_ATTRIBUTES").filter(|v| !v.trim().is_empty()) {
            for (key, value) in parse_key_values(&list).map_err(|problem| ResourceError {
                variable: "OTEL_RESOURCE_ATTRIBUTES",
                problem,
            })? {
                if key == "service.name" {
                    config.service_name = Some(value);
                } else {
                    config.attributes.push((key, value));
                }
            }
        }
        if let Some(name) = var("OTEL_SERVICE_NAME").filter(|v| !v.trim().is_empty()) {
            config.service_name = Some(name);
        }
        Ok(config)
    }
}

/// `key1=value1,key2=value2` with percent-encoded values (W3C Baggage's octets), as
/// `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_EXPORTER_OTLP_HEADERS` write them. The problem names the
/// entry by position, never by its value (header values are secrets).
pub fn parse_key_values(list: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for (index, entry) in list.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            return Err(format!("entry {} has no `=`", index + 1));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("entry {} has no key", index + 1));
        }
        let value = percent_decode(value.trim()).ok_or_else(|| {
            format!(
                "entry {} (`{key}`) is not valid percent-encoded UTF-8",
                index + 1
            )
        })?;
        pairs.push((key.to_owned(), value));
    }
    Ok(pairs)
}

/// Decodes `%XX` escapes; `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Variables from a list, as `std::env::var` would give them.
    pub(in super::super) fn env<'a>(
        pairs: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn service_name_wins_over_the_attribute_and_other_attributes_are_kept_in_order() {
        let vars = [
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=from-list, deployment.environment=ci%20runner,team=evals",
            ),
            ("OTEL_SERVICE_NAME", "my-agent"),
        ];
        let config = ResourceConfig::from_env(&env(&vars)).unwrap();
        assert_eq!(config.service_name.as_deref(), Some("my-agent"));
        assert_eq!(
            config.attributes,
            [
                ("deployment.environment".to_owned(), "ci runner".to_owned()),
                ("team".to_owned(), "evals".to_owned())
            ]
        );
        let only_list = [("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-list")];
        let config = ResourceConfig::from_env(&env(&only_list)).unwrap();
        assert_eq!(config.service_name.as_deref(), Some("from-list"));
        assert_eq!(
            ResourceConfig::from_env(&env(&[])).unwrap(),
            ResourceConfig::default()
        );
    }

    #[test]
    fn a_malformed_entry_is_named_by_position_without_its_value() {
        let vars = [("OTEL_RESOURCE_ATTRIBUTES", "a=1,secretvalue")];
        let err = ResourceConfig::from_env(&env(&vars)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to read OTEL_RESOURCE_ATTRIBUTES: entry 2 has no `=`"
        );
        assert_eq!(
            parse_key_values("Authorization=Basic%zz").unwrap_err(),
            "entry 1 (`Authorization`) is not valid percent-encoded UTF-8"
        );
    }
}
