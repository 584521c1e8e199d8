#!/usr/bin/env python3
"""Starts moto's S3 API server on loopback for the object store tests, with signature checks on.

    s3_server.py       prints one JSON line {"port": n, "access_key": ..., "secret_key": ...}
                       once the server answers, then serves until its stdin closes.

Authentication: moto checks SigV4 signatures (and IAM policies) once
INITIAL_NO_AUTH_ACTION_COUNT unauthenticated actions have passed. The first three actions
create an IAM user, its access key and a policy allowing s3:*; every request after them, the
tests' own included, must be signed with that key or is refused (403).
Needs moto and boto3 (the base image's Python 3.11 ships both).

One correction to moto's verifier: it rebuilds the request URL through werkzeug, which decodes
%2F in the query, and then signs that decoded query. SigV4 requires '/' in query values to be
encoded ("Encode the forward slash character, '/', everywhere except in the object key name",
AWS General Reference, "Create a canonical request"), so spec-conforming requests (botocore's
own, and ours, e.g. ListObjectsV2 with delimiter=/) would be refused. The patch re-encodes the
query the way the specification says before moto computes its signature.
"""
import json
import os
import sys

os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import urllib.parse  # noqa: E402

import boto3  # noqa: E402
from moto.iam import access_control  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

_original_create_aws_request = access_control.IAMRequestBase._create_aws_request


def _create_aws_request_with_encoded_query(self):
    path, sep, query = self._path.partition("?")
    if sep:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        self._path = path + "?" + "&".join(
            urllib.parse.quote(k, safe="-_.~") + "=" + urllib.parse.quote(v, safe="-_.~") for k, v in pairs)
    return _original_create_aws_request(self)


access_control.IAMRequestBase._create_aws_request = _create_aws_request_with_encoded_query


def main():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    iam = boto3.client("iam", endpoint_url="http://127.0.0.1:%d" % port, region_name="us-east-1",
                       aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
    iam.create_user(UserName="cubestream-test")
    key = iam.create_access_key(UserName="cubestream-test")["AccessKey"]
    iam.put_user_policy(UserName="cubestream-test", PolicyName="s3-all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }))
    print(json.dumps({"port": port, "access_key": key["AccessKeyId"], "secret_key": key["SecretAccessKey"]}),
          flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
