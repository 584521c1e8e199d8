#!/usr/bin/env python3
"""Starts moto's S3 API server on loopback for the object store tests, with signature checks on.

    s3_server.py       prints one JSON line {"port": n, "access_key": ..., "secret_key": ...}
                       once the server answers, then serves until its stdin closes.

Authentication: moto checks SigV4 signatures (and IAM policies) once
INITIAL_NO_AUTH_ACTION_COUNT unauthenticated actions have passed. The first three actions
create an IAM user, its access key and a policy allowing s3:*; every request after them, the
tests' own included, must be signed with that key or is refused (403).
Needs moto and boto3 (the base image's Python 3.11 ships both).
"""
import json
import os
import sys

os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402


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
