"""CloudFormation, emulated: what `cdk deploy` sends, answered as AWS does, for the app's resources.

moto's CloudFormation skips resource types it does not model and lacks parts of change sets and
exports that the CDK CLI relies on. ``patches.py`` corrects those; ``models.py`` models the resource
types the app's stacks need that moto skips (so Ref and Fn::GetAtt on them resolve);
``property_names.py`` maps property names to the API's member names and back;
``custom_resources.py`` runs Lambda-backed custom resources by CloudFormation's request-response
protocol (moto sent only Create, to an address outside the emulator).
"""
