"""The daemon's API checked by tools nobody here wrote (issue 54).

    api_contract.py spec DOC.json            the document is valid OpenAPI 3.1 (openapi-spec-validator)
    api_contract.py events DOC.json < LINES  each line (a JSON event) is one of components.schemas.Event
                                             (openapi-schema-validator, JSON Schema 2020-12)

Prints "ok: ..." and exits 0, or says what is wrong and exits 1.
"""
import json
import sys

from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012


def main() -> int:
    command, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        spec = json.load(f)
    if command == "spec":
        try:
            validate(spec)
        except Exception as e:  # the validator's own error types vary by version
            print("invalid: %s" % str(e).splitlines()[0])
            return 1
        print("ok: a valid OpenAPI %s document, %d paths" % (spec["openapi"], len(spec["paths"])))
        return 0
    if command == "events":
        registry = Registry().with_resource("urn:starling:api", Resource.from_contents(spec, default_specification=DRAFT202012))
        validator = OAS31Validator({"$ref": "urn:starling:api#/components/schemas/Event"}, registry=registry)
        count, bad = 0, 0
        for line in sys.stdin:
            line = line.strip()
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            errors = sorted(validator.iter_errors(event), key=lambda e: list(e.path))
            if errors:
                bad += 1
                print("not an Event: %s (%s)" % (line[:200], errors[0].message[:200]))
            count += 1
        if bad or count == 0:
            print("%d of %d lines are not events of the document" % (bad, count))
            return 1
        print("ok: %d events, each one of the document's" % count)
        return 0
    print("unknown command %s" % command)
    return 64


if __name__ == "__main__":
    sys.exit(main())
