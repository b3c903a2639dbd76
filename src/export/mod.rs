//! Exporters: recorded runs written in other tools' formats, each a pure function from runs to
//! bytes in its own folder. `otlp` writes OpenTelemetry traces (OTLP/JSON).

pub mod otlp;
