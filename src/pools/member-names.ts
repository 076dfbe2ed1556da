// The member naming rules live in member-names.ts; pools keeps importing them from here.
export { compareNatural, memberIndexOf, memberNameFor, nextMemberNames } from '../member-names.js';
