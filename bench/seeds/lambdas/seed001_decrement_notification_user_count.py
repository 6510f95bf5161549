"""Seed 001 DecrementNotificationUserCount: starts a round's user countdown, as the seed's code does."""


def lambda_handler(event, context):
    return {
        'notification_count': event['notification_count'],
        'notification_user_accounts': event['notification_user_accounts'],
        'notification_user_count': len(event['notification_user_accounts']) - 1,
        'is_first_alert': False
    }
