//! Models propose the next action; they never run anything. This module holds the contract every
//! model implements and the models looptrace ships: scripted, raw JSON text through the strict
//! adapter, replay of a recorded run, and live model servers over HTTP.

mod contract;
mod json_adapter;
pub mod live;
mod replay;
mod scripted;

pub use contract::{
    CallRecord, InvalidOutput, InvalidOutputKind, LiveIdentity, Model, ModelError, ProviderError,
    ProviderErrorKind, RawModel, RetriedAttempt, TurnItem, Usage,
};
pub use json_adapter::{JsonModelAdapter, action_from_value, json_type_name, parse_json_action};
pub use replay::{RecordedResponses, RecordedTurn, ReplayError, ReplayModel, end_of_recording};
pub use scripted::{ModelCall, ScriptPlayer, ScriptedModel, ScriptedRawModel};
