//! Where and how spans are pushed: the endpoint, headers, compression, timeout and protocol of a
//! `--endpoint` flag and the standard `OTEL_EXPORTER_OTLP_*` variables, read once into a checked
//! [`PushConfig`]. Header values are secrets: no message, `Debug` output or trace shows them.

use std::fmt;
use std::time::Duration;

use super::resource::parse_key_values;

/// The timeout of one request when `OTEL_EXPORTER_OTLP_TIMEOUT` is not set (the specification's
/// default, 10 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A checked push configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct PushConfig {
    /// The full traces URL requests go to.
    pub endpoint: String,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TRACES_HEADERS`): secrets.
    pub headers: Vec<(String, String)>,
    /// Whether bodies are sent gzip-compressed.
    pub gzip: bool,
    /// The timeout of one request.
    pub timeout: Duration,
}

impl fmt::Debug for PushConfig {
    /// Shows header names only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("PushConfig")
            .field("endpoint", &self.endpoint)
            .field("headers", &names)
            .field("gzip", &self.gzip)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A push configuration that cannot be used: bad usage or input (exit 2).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// No endpoint anywhere.
    #[error(
        "no OTLP endpoint: give one, or set OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT"
    )]
    NoEndpoint,
    /// The endpoint is not an `http://` or `https://` URL.
    #[error("{setting} `{url}` is not an http:// or https:// URL")]
    BadEndpoint {
        /// Which setting gave it.
        setting: &'static str,
        /// The URL as given.
        url: String,
    },
    /// gRPC or another protocol looptrace does not send.
    #[error(
        "{variable}={value} is not supported: looptrace sends OTLP/HTTP with protobuf (`http/protobuf`); point it at the receiver's HTTP port (4318 by default, Phoenix's 6006) instead of gRPC"
    )]
    Protocol {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A compression other than `gzip` or `none`.
    #[error("{variable}={value} is not supported: use `gzip` or `none`")]
    Compression {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A timeout that is not a number of milliseconds.
    #[error("{variable}={value} is not a timeout in milliseconds")]
    Timeout {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A malformed headers variable; the problem never quotes a value.
    #[error("failed to read {variable}: {problem}")]
    Headers {
        /// The variable.
        variable: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl PushConfig {
    /// The configuration for `endpoint` (a flag, used as given) or, without one, the standard
    /// variables read through `var`: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended. A traces-specific variable wins
    /// over its general one.
    pub fn resolve(
        endpoint: Option<&str>,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<PushConfig, ConfigError> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let specific = |name: &'static str, general: &'static str| {
            set(name)
                .map(|value| (name, value))
                .or_else(|| set(general).map(|value| (general, value)))
        };
        if let Some((variable, value)) = specific(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ) && value.trim() != "http/protobuf"
        {
            return Err(ConfigError::Protocol { variable, value });
        }
        let (source, url) = match endpoint {
            Some(url) => ("--endpoint", url.to_owned()),
            None => match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                Some(url) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url),
                None => match set("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(base) => (
                        "OTEL_EXPORTER_OTLP_ENDPOINT",
                        format!("{}/v1/traces", base.trim_end_matches('/')),
                    ),
                    None => return Err(ConfigError::NoEndpoint),
                },
            },
        };
        let url = url.trim().to_owned();
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://"))
            || url.parse::<ureq::http::Uri>().is_err()
        {
            return Err(ConfigError::BadEndpoint {
                setting: source,
                url: without_userinfo(&url),
            });
        }
        let gzip = match specific(
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ) {
            None => false,
            Some((_, value)) if value.trim() == "none" => false,
            Some((_, value)) if value.trim() == "gzip" => true,
            Some((variable, value)) => return Err(ConfigError::Compression { variable, value }),
        };
        let timeout = match specific(
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ) {
            None => DEFAULT_TIMEOUT,
            Some((variable, value)) => match value.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(ConfigError::Timeout { variable, value }),
            },
        };
        let mut headers = Vec::new();
        for variable in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            let Some(list) = set(variable) else { continue };
            // Its values are credentials: no tool, MCP server or gate may receive it.
            crate::secrets::forbid_var(variable);
            let pairs = parse_key_values(&list)
                .map_err(|problem| ConfigError::Headers { variable, problem })?;
            for (name, value) in pairs {
                check_header(&name, &value)
                    .map_err(|problem| ConfigError::Headers { variable, problem })?;
                // The traces-specific variable comes second and replaces a general header.
                headers.retain(|(known, _): &(String, String)| !known.eq_ignore_ascii_case(&name));
                headers.push((name, value));
            }
        }
        Ok(PushConfig {
            endpoint: url,
            headers,
            gzip,
            timeout,
        })
    }

    /// The endpoint for messages: without any `user:password@`.
    pub fn shown_endpoint(&self) -> String {
        without_userinfo(&self.endpoint)
    }
}

/// A header name must be an HTTP token and its value printable; the problem names the header,
/// never its value.
fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("`{name}` is not a valid header name"));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!(
            "the value of header `{name}` holds a control character"
        ));
    }
    Ok(())
}

/// `url` with any `user:password@` before its host removed.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::resource::tests::env;
    use super::*;

    #[test]
    fn the_flag_is_used_as_given_and_the_general_variable_gets_v1_traces() {
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")];
        let config =
            PushConfig::resolve(Some("http://127.0.0.1:6006/custom"), &env(&vars)).unwrap();
        assert_eq!(config.endpoint, "http://127.0.0.1:6006/custom");
        let config = PushConfig::resolve(None, &env(&vars)).unwrap();
        assert_eq!(config.endpoint, "http://collector:4318/v1/traces");
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://x.example/otel",
            ),
        ];
        let config = PushConfig::resolve(None, &env(&vars)).unwrap();
        assert_eq!(config.endpoint, "https://x.example/otel");
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
        assert!(!config.gzip);
        assert_eq!(
            PushConfig::resolve(None, &env(&[])).unwrap_err(),
            ConfigError::NoEndpoint
        );
    }

    #[test]
    fn grpc_is_refused_and_bad_settings_are_named() {
        let vars = [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
        let err = PushConfig::resolve(Some("http://h:4317"), &env(&vars)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported")
        );
        let vars = [
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ];
        let config = PushConfig::resolve(Some("http://h:4318/v1/traces"), &env(&vars)).unwrap();
        assert!(config.gzip);
        assert_eq!(config.timeout, Duration::from_millis(2500));
        let vars = [("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd")];
        assert!(matches!(
            PushConfig::resolve(Some("http://h"), &env(&vars)),
            Err(ConfigError::Compression { .. })
        ));
        let err = PushConfig::resolve(Some("ftp://u:pw@h/x"), &env(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--endpoint `ftp://h/x` is not an http:// or https:// URL"
        );
    }

    #[test]
    fn headers_are_merged_and_never_shown() {
        let vars = [
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Basic%20c2VjcmV0,x-team=a",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Team=b"),
        ];
        let config = PushConfig::resolve(Some("http://h/v1/traces"), &env(&vars)).unwrap();
        assert_eq!(
            config.headers,
            [
                ("Authorization".to_owned(), "Basic c2VjcmV0".to_owned()),
                ("X-Team".to_owned(), "b".to_owned())
            ]
        );
        let shown = format!("{config:?}");
        assert!(
            shown.contains("Authorization") && !shown.contains("c2VjcmV0"),
            "{shown}"
        );
        let vars = [("OTEL_EXPORTER_OTLP_HEADERS", "bad name=s3cr3t")];
        let err = PushConfig::resolve(Some("http://h"), &env(&vars)).unwrap_err();
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
        let vars = [("OTEL_EXPORTER_OTLP_HEADERS", "k=s3cr3t%0A")];
        let err = PushConfig::resolve(Some("http://h"), &env(&vars)).unwrap_err();
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
    }
}
