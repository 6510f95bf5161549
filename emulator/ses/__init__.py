"""Amazon SES v2, emulated with verified identities and the sandbox of a new account.

moto's SES v2 stores identities and sent mail, refuses a ``SendEmail`` from an identity it does not
hold ("Email address not verified ..."), but creates every identity with ``VerifiedForSendingStatus``
false, sends to any recipient, and keeps only one body of a message with both text and HTML.
``patches.py`` corrects that as the SES Developer Guide describes it ("Verified identities in Amazon
SES", "Request production access (Moving out of the Amazon SES sandbox)"):

- ``CreateEmailIdentity`` verifies at once: the emulator sends no verification mail and sees no DNS,
  so an identity is ``VerifiedForSendingStatus`` true and ``VerificationStatus`` ``SUCCESS`` as soon as
  it is created (on AWS an address is verified when its owner follows the link mailed to it, a
  domain when its DKIM records are found).
- ``SendEmail`` from an address whose address or domain is not an identity, or, while the account is in
  the sandbox (``LocalAws.email_sandbox``, on by default), to a recipient that is not, is refused with
  ``MessageRejected``: "Email address is not verified. The following identities failed the check in
  region US-EAST-1: ..." (AWS re:Post, "Why am I getting a 554 or 400 'Message rejected' error with the
  message 'Email address is not verified' from Amazon SES?"). The mailbox simulator's addresses
  (``@simulator.amazonses.com``) are let through, as in the sandbox.
- Each mail sent is kept, one row a recipient, with its text body (``mail_log``): the console's
  E-mail page.
"""
