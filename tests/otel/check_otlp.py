"""Parses an OTLP/JSON file (one TracesData per line) with the OpenTelemetry protobuf definitions
(the `opentelemetry-proto` package) and prints, per line, the spans as protobuf decoded them.

OTLP/JSON writes trace and span ids as hex, where the generic proto3 JSON mapping expects base64:
the ids are checked to be lowercase hex of 32 and 16 characters, then converted before parsing.
Any other deviation from the schema (an unknown field, a wrong type) fails the parse.

Usage: python check_otlp.py FILE   (exit 0 and JSON lines on stdout, or exit 1 with the reason)
"""

import base64
import json
import re
import sys

from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def hex_to_base64(obj, key, pattern, where):
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.match(value):
        fail(f"{where}.{key}: {value!r} is not lowercase hex of the right length")
    obj[key] = base64.b64encode(bytes.fromhex(value)).decode()
    return value


def any_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def attributes(items):
    return {a.key: any_value(a.value) for a in items}


def main(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            doc = json.loads(line)
            hex_ids = []
            for r, rs in enumerate(doc.get("resourceSpans", [])):
                for s, ss in enumerate(rs.get("scopeSpans", [])):
                    for k, span in enumerate(ss.get("spans", [])):
                        where = f"line {number} resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                        ids = (
                            hex_to_base64(span, "traceId", TRACE_ID, where),
                            hex_to_base64(span, "spanId", SPAN_ID, where),
                            hex_to_base64(span, "parentSpanId", SPAN_ID, where),
                        )
                        hex_ids.append(ids)
            message = TracesData()
            try:
                json_format.ParseDict(doc, message)
            except json_format.ParseError as err:
                fail(f"line {number}: {err}")
            spans = []
            for rs in message.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        spans.append(
                            {
                                "resource": attributes(rs.resource.attributes),
                                "scope": ss.scope.name,
                                "schema_url": ss.schema_url,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "name": span.name,
                                "kind": span.kind,
                                "start": span.start_time_unix_nano,
                                "end": span.end_time_unix_nano,
                                "status": span.status.code,
                                "attributes": attributes(span.attributes),
                                "events": [
                                    {
                                        "name": e.name,
                                        "time": e.time_unix_nano,
                                        "attributes": attributes(e.attributes),
                                    }
                                    for e in span.events
                                ],
                            }
                        )
            # The bytes protobuf decoded are the hex the file holds.
            for span, (trace_id, span_id, parent) in zip(spans, hex_ids):
                if span["trace_id"] != trace_id or span["span_id"] != span_id:
                    fail(f"line {number}: ids changed in decoding")
                if span["parent"] != (parent or ""):
                    fail(f"line {number}: parent id changed in decoding")
            print(json.dumps(spans))


if __name__ == "__main__":
    main(sys.argv[1])
