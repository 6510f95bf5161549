"""CloudWatch Logs, emulated: moto's backend, read as CloudWatch Logs answers FilterLogEvents.

moto stores groups, streams and events and answers the Logs API. Lambda functions' lines reach it
through ``emulator/awslambda/logs.py``; ``patches.py`` corrects how moto reads them back.
"""
