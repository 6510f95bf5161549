"""CDK stacks of the Step Functions patterns app: one stack per pattern plus monitoring."""
