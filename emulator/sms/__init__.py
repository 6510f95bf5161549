"""AWS End User Messaging SMS and voice (the ``pinpoint-sms-voice-v2`` API), emulated as strict as a new account.

moto 5.2.5 has no ``pinpoint-sms-voice-v2`` at all (``moto/pinpoint`` is Amazon Pinpoint's campaign API),
so ``service.py`` answers the JSON API (X-Amz-Target ``PinpointSMSVoiceV2.*``) on the emulator's
endpoint, and keeps the phone log the console's Phone page shows. What it plays, as the End User
Messaging SMS User Guide and API Reference document it:

- The account owns one two-way phone number (``PHONE_NUMBER``, its id ``PHONE_NUMBER_ID``), as if
  requested beforehand: the stack never buys one. ``UpdatePhoneNumber`` sets its ``TwoWayEnabled`` and
  ``TwoWayChannelArn`` (an SNS topic); ``DescribePhoneNumbers`` lists it.
- ``SendTextMessage`` and ``SendVoiceMessage`` from that number (by number, id or ARN). The SMS/voice
  sandbox is on, as for a new account ("SMS/MMS and Voice sandbox"): texts and calls reach verified
  destination numbers only (at most 10), SMS spending stops at $1.00 a month, and a voice sandbox
  allows 20 voice messages a day, 5 to one recipient in 24 hours and 5 a minute.
- ``CreateVerifiedDestinationNumber``, ``SendDestinationNumberVerificationCode`` (the code is texted,
  or spoken, to the number: it is in the phone log), ``VerifyDestinationNumber``,
  ``DescribeVerifiedDestinationNumbers``.
- Opt-out lists: the account's ``Default`` list, ``PutOptedOutNumber``, ``DescribeOptedOutNumbers``;
  a reply ``STOP`` opts its sender out; a send to an opted-out number is refused.
- ``DescribeSpendLimits``, ``DescribeAccountAttributes`` (``ACCOUNT_TIER``: ``SANDBOXED``).
- Replies: ``SmsVoice.receive`` (the console's reply box, ``POST /api/phone/reply``) is a text from a
  phone to the account's number, published to the number's two-way SNS topic in the documented
  payload ("Example of a two-way SMS message payload for Amazon SNS topics"), as the number's
  ``TwoWayChannelRole`` or else by the topic's policy, which must let ``sms-voice.amazonaws.com`` publish.

Where it differs: a text costs the emulator's round ``SMS_PART_USD`` per message part (AWS's price
depends on the country and the number type); a voice message's 30-second length, voice spending,
registrations, pools, sender IDs, keywords other than STOP, HELP's automatic answer, configuration
sets and event destinations are not played; time is the emulator's simulated clock (a month and a
day are UTC calendar ones). IAM is checked as for moto's services (``emulator/iam``): a text or call on
the ARN of the phone number it is sent from.
"""

from emulator.sms.deployer import verify_destination
from emulator.sms.service import PHONE_NUMBER, PHONE_NUMBER_ID, SMS_PART_USD, TARGET_PREFIX, SmsVoice

__all__ = ["PHONE_NUMBER", "PHONE_NUMBER_ID", "SMS_PART_USD", "TARGET_PREFIX", "SmsVoice", "verify_destination"]
