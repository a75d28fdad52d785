-- Reserved for a change under way (SPEC 29/25); a no-op until it lands.
SELECT 1;
